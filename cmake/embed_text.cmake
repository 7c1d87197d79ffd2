# Writes OUTPUT: a header declaring the text of INPUT as `inline constexpr char
# NAME[]` (a raw string literal), e.g. docs/openapi.json served by dqd.
file(READ "${INPUT}" content)
string(FIND "${content}" ")text\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds )text\" and cannot be embedded as a raw string")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_text.cmake. Do not edit.\n#pragma once\n\n"
  "namespace dq {\n\ninline constexpr char ${NAME}[] = R\"text(${content})text\";\n\n}  // namespace dq\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")

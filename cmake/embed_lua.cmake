# Writes OUTPUT: a header with one LuaScript per common/store/lua/*.lua, holding the
# source and its SHA1 (what Redis names the script for EVALSHA). Each script
# is prefixed with common/store/lua/lib/prelude.lua (shared helper functions), so
# every transition stays a single EVALSHA.
file(GLOB scripts "${LUA_DIR}/*.lua")
file(READ "${LUA_DIR}/lib/prelude.lua" prelude)
list(SORT scripts)
set(text "// Generated from common/store/lua/*.lua by cmake/embed_lua.cmake. Do not edit.\n#pragma once\n\n#include \"common/redis/script_call.h\"\n\nnamespace dq {\n\n")
foreach(script ${scripts})
  get_filename_component(name "${script}" NAME_WE)
  file(READ "${script}" body)
  set(source "${prelude}${body}")
  string(SHA1 sha "${source}")
  # add -> kAddScript, requeue_expired -> kRequeueExpiredScript
  string(REPLACE "_" ";" parts "${name}")
  set(camel "")
  foreach(part ${parts})
    string(SUBSTRING "${part}" 0 1 first)
    string(TOUPPER "${first}" first)
    string(SUBSTRING "${part}" 1 -1 rest)
    string(APPEND camel "${first}${rest}")
  endforeach()
  string(APPEND text "inline constexpr LuaScript k${camel}Script{\"${name}\", R\"lua(${source})lua\", \"${sha}\"};\n\n")
endforeach()
string(APPEND text "}  // namespace dq\n")
file(WRITE "${OUTPUT}.tmp" "${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")

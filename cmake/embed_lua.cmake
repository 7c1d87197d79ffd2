# Writes OUTPUT: a header with the dq function library (kScriptLibrary: the
# Lua source Redis loads with FUNCTION LOAD) and one LuaScript per
# common/store/lua/*.lua, naming its function for FCALL.
#
# The library is common/store/lua/lib/prelude.lua (the shared helpers, run
# once when Redis loads the library) followed by each script wrapped as one
# registered function: function(KEYS, ARGV) begin_call(KEYS) <script> end, so
# a script reads KEYS and ARGV as it would under EVAL.
#
# The library's name carries a hash of its text (dq_<16 hex>), and each
# function's name the library's: hosts of two dq versions on the same shards
# (a rolling upgrade) call their own functions, never the other's.
#
# Flags: a script may say `-- function flags: <flags>` on a line of its
# header ("none", or Redis's flag names separated by spaces). Without the
# line a function gets allow-oom: it moves or ends jobs, which a full Redis
# must still do to drain; a script that stores new data says "none" and is
# refused whole (OOM, nothing written) while Redis is over maxmemory. A
# script that never writes says no-writes (runs on a full or read-only Redis).
file(GLOB scripts "${LUA_DIR}/*.lua")
file(READ "${LUA_DIR}/lib/prelude.lua" prelude)
list(SORT scripts)

set(functions "")
set(declarations "")
foreach(script ${scripts})
  get_filename_component(name "${script}" NAME_WE)
  file(READ "${script}" body)
  set(flags "'allow-oom'")
  string(REGEX MATCH "\n?-- function flags: ([a-z -]+)\n" flag_line "${body}")
  if(flag_line)
    string(STRIP "${CMAKE_MATCH_1}" said)
    if(said STREQUAL "none")
      set(flags "")
    else()
      string(REPLACE " " "', '" flags "'${said}'")
    endif()
  endif()
  string(APPEND functions
         "redis.register_function{function_name = '@LIB@_${name}', flags = {${flags}},\n"
         "callback = function(KEYS, ARGV)\nbegin_call(KEYS)\n${body}\nend}\n\n")
  # add -> kAddScript, requeue_expired -> kRequeueExpiredScript
  string(REPLACE "_" ";" parts "${name}")
  set(camel "")
  foreach(part ${parts})
    string(SUBSTRING "${part}" 0 1 first)
    string(TOUPPER "${first}" first)
    string(SUBSTRING "${part}" 1 -1 rest)
    string(APPEND camel "${first}${rest}")
  endforeach()
  string(APPEND declarations
         "inline constexpr LuaScript k${camel}Script{\"${name}\", \"@LIB@_${name}\", &kScriptLibrary};\n")
endforeach()

string(SHA1 hash "${prelude}${functions}")
string(SUBSTRING "${hash}" 0 16 hash)
set(library_name "dq_${hash}")
set(library "#!lua name=${library_name}\n${prelude}\n${functions}")
string(REPLACE "@LIB@" "${library_name}" library "${library}")
string(REPLACE "@LIB@" "${library_name}" declarations "${declarations}")

set(text "// Generated from common/store/lua/*.lua by cmake/embed_lua.cmake. Do not edit.\n#pragma once\n\n#include \"common/redis/script_call.h\"\n\nnamespace dq {\n\n")
string(APPEND text "inline constexpr ScriptLibrary kScriptLibrary{\"${library_name}\", R\"lua(${library})lua\"};\n\n")
string(APPEND text "${declarations}\n}  // namespace dq\n")
file(WRITE "${OUTPUT}.tmp" "${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")

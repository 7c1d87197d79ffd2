// A Lua script with the KEYS and ARGV of one run. The scripts themselves are
// embedded at build time (common/store/lua_scripts.h, generated from
// common/store/lua/*.lua); their builders are in common/store/script_calls.h.
#pragma once

#include <string>
#include <vector>

namespace dq {

struct LuaScript {
  const char* name;
  const char* source;
  const char* sha1;  // what Redis names the script for EVALSHA
};

struct ScriptCall {
  const LuaScript* script = nullptr;
  std::vector<std::string> keys;
  std::vector<std::string> args;

  // argv for EVALSHA sha numkeys keys... args...
  std::vector<std::string> evalsha_argv() const;
  // argv for EVAL source numkeys keys... args... (after a NOSCRIPT error)
  std::vector<std::string> eval_argv() const;
};

}  // namespace dq

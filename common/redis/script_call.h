// A call of one of dq's Lua functions with the KEYS and ARGV of one run.
// The functions are one Redis function library embedded at build time
// (common/store/lua_scripts.h, generated from common/store/lua/*.lua by
// cmake/embed_lua.cmake); their builders are in common/store/script_calls.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/core/status.h"

namespace dq {

// The library as Redis loads it (FUNCTION LOAD): its name carries a hash of
// its text, so two dq versions on the same shards each call their own.
struct ScriptLibrary {
  const char* name;
  const char* source;
};

struct LuaScript {
  const char* name;      // the script's file name: "add" for lua/add.lua
  const char* function;  // what Redis names its function for FCALL
  const ScriptLibrary* library;
};

struct ScriptCall {
  const LuaScript* script = nullptr;
  std::vector<std::string> keys;
  std::vector<std::string> args;

  // argv for FCALL function numkeys keys... args...
  std::vector<std::string> call_argv() const;
  // argv for FUNCTION LOAD REPLACE of its library: when Redis answered that
  // the function is not found (a new or flushed Redis), before calling again.
  std::vector<std::string> load_argv() const;
};

// argv for FUNCTION LOAD REPLACE library.
std::vector<std::string> library_load_argv(const ScriptLibrary& library);

// Whether a Redis error reply says the called function is not loaded.
bool is_function_missing(std::string_view error);

// What a call that met a Redis without the library answers when the load
// failed too: the call did not run, so a refusal (full, read-only) is
// answered as it is, and anything else (a lost connection) as unavailable,
// never as an unknown outcome.
Status library_load_failed(const std::string& shard, const Status& load);

}  // namespace dq

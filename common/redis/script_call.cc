#include "common/redis/script_call.h"

namespace dq {

std::vector<std::string> ScriptCall::call_argv() const {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back("FCALL");
  argv.emplace_back(script->function);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> ScriptCall::load_argv() const {
  return {"FUNCTION", "LOAD", "REPLACE", script->library->source};
}

bool is_function_missing(std::string_view error) {
  // Redis 7.0: "ERR Function not found".
  return error.find("Function not found") != std::string_view::npos;
}

}  // namespace dq

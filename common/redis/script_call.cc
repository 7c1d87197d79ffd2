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
  return library_load_argv(*script->library);
}

std::vector<std::string> library_load_argv(const ScriptLibrary& library) {
  return {"FUNCTION", "LOAD", "REPLACE", library.source};
}

bool is_function_missing(std::string_view error) {
  // Redis 7.0: "ERR Function not found".
  return error.find("Function not found") != std::string_view::npos;
}

Status library_load_failed(const std::string& shard, const Status& load) {
  if (load.code() == Code::kUnavailable) {
    return load;
  }
  return Status(Code::kUnavailable, "Redis shard " + shard +
                                        ": dq's functions could not be loaded (" + load.message() +
                                        "); nothing was written");
}

}  // namespace dq

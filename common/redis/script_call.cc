#include "common/redis/script_call.h"

namespace dq {
namespace {

std::vector<std::string> script_argv(const ScriptCall& call, bool with_source) {
  std::vector<std::string> argv;
  argv.reserve(3 + call.keys.size() + call.args.size());
  argv.emplace_back(with_source ? "EVAL" : "EVALSHA");
  argv.emplace_back(with_source ? call.script->source : call.script->sha1);
  argv.push_back(std::to_string(call.keys.size()));
  argv.insert(argv.end(), call.keys.begin(), call.keys.end());
  argv.insert(argv.end(), call.args.begin(), call.args.end());
  return argv;
}

}  // namespace

std::vector<std::string> ScriptCall::evalsha_argv() const { return script_argv(*this, false); }
std::vector<std::string> ScriptCall::eval_argv() const { return script_argv(*this, true); }

}  // namespace dq

#include "common/store/move_calls.h"

#include "common/store/keys.h"
#include "common/store/lua_scripts.h"

namespace dq {

ScriptCall move_mark_call(const std::vector<std::pair<std::string, std::string>>& pairs) {
  ScriptCall call{
      &kMoveMarkScript, {keys::moving(), keys::bodies(), keys::errors()}, {keys::dead_prefix()}};
  for (const auto& [key, target] : pairs) {
    call.args.push_back(key);
    call.args.push_back(target);
  }
  return call;
}

ScriptCall move_in_call(const MarkedJob& job, const std::string& source) {
  return {&kMoveInScript,
          {keys::bodies(), keys::counts(), keys::seq(), keys::errors()},
          {job.key, source, job.record, job.body, job.error, job.dead_score, keys::dead_prefix(),
           keys::held_prefix()}};
}

ScriptCall move_done_call(const std::string& key, bool undo) {
  return {&kMoveDoneScript,
          {keys::records_prefix(), keys::bodies(), keys::errors(), keys::counts(), keys::moving(),
           keys::moved_out(), keys::timer_wake()},
          {key, undo ? "undo" : "done", keys::dead_prefix()}};
}

ScriptCall move_lease_call(const std::string& holder, int64_t lease_ms) {
  return {&kMoveLeaseScript, {keys::mover_lease()}, {holder, std::to_string(lease_ms)}};
}

}  // namespace dq

#include "common/store/move_calls.h"

#include "common/core/text_list.h"
#include "common/store/keys.h"
#include "common/store/lua_scripts.h"

namespace dq {

ScriptCall move_pick_call(int most) {
  return {&kMovePickScript, {keys::due_index()}, {std::to_string(most)}};
}

ScriptCall move_mark_call(const std::vector<std::pair<std::string, std::string>>& pairs) {
  ScriptCall call{
      &kMoveMarkScript, {keys::moving(), keys::bodies(), keys::errors()}, {keys::dead_prefix()}};
  for (const auto& [key, target] : pairs) {
    call.args.push_back(key);
    call.args.push_back(target);
  }
  return call;
}

ScriptCall move_in_call(const std::vector<const MarkedJob*>& jobs, const std::string& source) {
  ScriptCall call{&kMoveInScript,
                  {keys::bodies(), keys::counts(), keys::seq(), keys::errors()},
                  {source, keys::dead_prefix(), keys::held_prefix()}};
  for (const MarkedJob* job : jobs) {
    for (const std::string* field :
         {&job->key, &job->record, &job->body, &job->error, &job->dead_score}) {
      call.args.push_back(*field);
    }
  }
  return call;
}

ScriptCall move_done_call(const std::vector<std::pair<std::string, std::string>>& pairs) {
  ScriptCall call{&kMoveDoneScript,
                  {keys::bodies(), keys::errors(), keys::counts(), keys::moving(),
                   keys::moved_out(), keys::timer_wake()},
                  {keys::dead_prefix()}};
  for (const auto& [key, verdict] : pairs) {
    call.args.push_back(key);
    call.args.push_back(verdict);
  }
  return call;
}

ScriptCall move_drop_call(const std::vector<std::pair<std::string, std::string>>& pairs,
                          const std::vector<std::string>& shard_names) {
  ScriptCall call{&kMoveDropScript,
                  {keys::bodies(), keys::errors(), keys::counts(), keys::working()},
                  {keys::dead_prefix(), keys::held_prefix(), join_list(shard_names, ",")}};
  for (const auto& [key, created] : pairs) {
    call.args.push_back(key);
    call.args.push_back(created);
  }
  return call;
}

ScriptCall move_lease_call(const std::string& holder, int64_t lease_ms,
                           const std::string& dead_holder) {
  return {&kMoveLeaseScript,
          {keys::mover_lease(), keys::draining_since()},
          {holder, std::to_string(lease_ms), dead_holder, std::to_string(kDrainingSinceTtlMs)}};
}

}  // namespace dq

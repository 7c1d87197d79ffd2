#include "common/store/move_calls.h"

#include "common/store/keys.h"
#include "common/store/lua_scripts.h"
#include "common/store/reply_values.h"

namespace dq {

std::vector<MarkedJob> marked_jobs_of(const redisReply* reply) {
  std::vector<MarkedJob> jobs;
  if (reply->type != REDIS_REPLY_ARRAY) {
    return jobs;
  }
  auto field = [reply](size_t i) { return reply_string(reply->element[i]); };
  for (size_t i = 0; i + 8 < reply->elements; i += 9) {
    jobs.push_back(MarkedJob{field(i), field(i + 1), field(i + 2), field(i + 3), field(i + 4),
                             field(i + 5), field(i + 6), field(i + 7), field(i + 8)});
  }
  return jobs;
}

ScriptCall move_scan_call(uint32_t first_bucket, int most) {
  return {
      &kMoveScanScript, {keys::due_index()}, {std::to_string(first_bucket), std::to_string(most)}};
}

ScriptCall move_mark_call(const std::vector<std::pair<std::string, std::string>>& pairs,
                          int64_t margin_ms) {
  ScriptCall call{&kMoveMarkScript,
                  {keys::moving(), keys::bodies(), keys::errors()},
                  {keys::dead_prefix(), std::to_string(margin_ms)}};
  for (const auto& [key, target] : pairs) {
    call.args.push_back(key);
    call.args.push_back(target);
  }
  return call;
}

ScriptCall move_in_call(const std::vector<const MarkedJob*>& jobs) {
  ScriptCall call{&kMoveInScript,
                  {keys::bodies(), keys::counts(), keys::seq(), keys::errors(), keys::timer_wake()},
                  {keys::dead_prefix()}};
  for (const MarkedJob* job : jobs) {
    for (const std::string* field : {&job->key, &job->record, &job->body, &job->error,
                                     &job->dead_score, &job->after, &job->waiters}) {
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

ScriptCall move_drop_call(const std::vector<std::pair<std::string, std::string>>& pairs) {
  ScriptCall call{&kMoveDropScript,
                  {keys::bodies(), keys::errors(), keys::counts(), keys::working()},
                  {keys::dead_prefix()}};
  for (const auto& [key, created] : pairs) {
    call.args.push_back(key);
    call.args.push_back(created);
  }
  return call;
}

ScriptCall dep_carry_out_call(const std::vector<std::string>& keys) {
  return {&kDepCarryOutScript, {keys::awaited()}, keys};
}

namespace {

ScriptCall carry_call(const LuaScript* script,
                      const std::vector<std::pair<std::string, std::string>>& pairs) {
  ScriptCall call{script, {keys::awaited()}, {}};
  for (const auto& [key, value] : pairs) {
    call.args.push_back(key);
    call.args.push_back(value);
  }
  return call;
}

}  // namespace

ScriptCall dep_carry_in_call(const std::vector<std::pair<std::string, std::string>>& pairs) {
  return carry_call(&kDepCarryInScript, pairs);
}

ScriptCall dep_carry_done_call(const std::vector<std::pair<std::string, std::string>>& pairs) {
  return carry_call(&kDepCarryDoneScript, pairs);
}

ScriptCall ended_carry_out_call(const std::vector<std::string>& keys) {
  return {&kEndedCarryOutScript, {keys::awaited()}, keys};
}

ScriptCall ended_carry_in_call(const std::vector<std::string>& triples) {
  return {&kEndedCarryInScript, {keys::awaited()}, triples};
}

ScriptCall ended_carry_done_call(const std::vector<std::pair<std::string, std::string>>& pairs) {
  return carry_call(&kEndedCarryDoneScript, pairs);
}

ScriptCall move_lease_call(const std::string& holder, int64_t lease_ms,
                           const std::string& dead_holder, bool draining) {
  return {&kMoveLeaseScript,
          {keys::mover_lease(), keys::draining_since()},
          {holder, std::to_string(lease_ms), dead_holder,
           draining ? std::to_string(kDrainingSinceTtlMs) : "0"}};
}

}  // namespace dq

#include "common/script_calls.h"

#include <ctime>

#include "common/job.h"
#include "common/keys.h"

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

std::string day_of(int64_t ms) {
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm local {};
  localtime_r(&seconds, &local);
  char text[16];
  strftime(text, sizeof(text), "%Y%m%d", &local);
  return text;
}

ScriptCall add_call(const std::string& topic, const std::string& id, int64_t due_ms, int64_t now_ms,
                    const std::string& body) {
  return {&kAddScript,
          {keys::jobs(), keys::delayed(), keys::stats(day_of(now_ms)), keys::timer_wake()},
          {job_key(topic, id), std::to_string(due_ms), std::to_string(now_ms), body, topic}};
}

ScriptCall del_call(const std::string& topic, const std::string& id, int64_t now_ms) {
  return {&kDelScript,
          {keys::jobs(), keys::delayed(), keys::working(), keys::ready(topic), keys::dead(topic),
           keys::errors(), keys::stats(day_of(now_ms))},
          {job_key(topic, id), topic}};
}

ScriptCall promote_call(int64_t now_ms, int limit) {
  return {&kPromoteScript,
          {keys::jobs(), keys::delayed(), keys::consumer_wake()},
          {std::to_string(now_ms), std::to_string(limit), keys::ready_prefix()}};
}

ScriptCall requeue_expired_call(int64_t now_ms, int limit) {
  return {&kRequeueExpiredScript,
          {keys::jobs(), keys::working(), keys::consumer_wake(), keys::stats(day_of(now_ms))},
          {std::to_string(now_ms), std::to_string(limit), keys::ready_prefix()}};
}

ScriptCall reserve_call(int64_t now_ms, const std::vector<ReserveSlot>& slots) {
  ScriptCall call{&kReserveScript,
                  {keys::jobs(), keys::working()},
                  {std::to_string(now_ms), keys::ready_prefix()}};
  for (const auto& slot : slots) {
    call.args.push_back(slot.topic);
    call.args.push_back(std::to_string(slot.lease_ms));
    call.args.push_back(std::to_string(slot.most));
  }
  return call;
}

ScriptCall ack_call(const std::string& topic, const std::string& id, int64_t now_ms) {
  return {&kAckScript,
          {keys::jobs(), keys::working(), keys::delayed(), keys::ready(topic), keys::dead(topic),
           keys::errors(), keys::stats(day_of(now_ms))},
          {job_key(topic, id), topic}};
}

ScriptCall fail_call(const std::string& topic, const std::string& id, int attempt, int64_t now_ms,
                     int64_t retry_delay_ms, int max_attempts, const std::string& error) {
  return {&kFailScript,
          {keys::jobs(), keys::working(), keys::delayed(), keys::dead(topic), keys::errors(),
           keys::stats(day_of(now_ms)), keys::timer_wake()},
          {job_key(topic, id), topic, std::to_string(attempt), std::to_string(now_ms),
           std::to_string(retry_delay_ms), std::to_string(max_attempts), error}};
}

ScriptCall dead_requeue_call(const std::string& topic, const std::string& id, int64_t now_ms,
                             int limit) {
  return {&kDeadRequeueScript,
          {keys::jobs(), keys::dead(topic), keys::delayed(), keys::errors(), keys::timer_wake(),
           keys::stats(day_of(now_ms))},
          {std::to_string(now_ms), topic, id.empty() ? std::string() : job_key(topic, id),
           std::to_string(limit)}};
}

ScriptCall dead_purge_call(const std::string& topic, int limit) {
  return {&kDeadPurgeScript,
          {keys::jobs(), keys::dead(topic), keys::errors()},
          {std::to_string(limit)}};
}

}  // namespace dq

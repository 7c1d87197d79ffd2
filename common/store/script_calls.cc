#include "common/store/script_calls.h"

#include <cstdio>
#include <ctime>

#include "common/core/clock.h"
#include "common/store/fence.h"
#include "common/store/job.h"
#include "common/store/keys.h"

namespace dq {
namespace {

// A reserve list outlives the longest lease by this much, for release.lua.
constexpr int64_t kLeaseListKeepMs = 60000;
// A cancel marker outlives any reserve still queued in a stalled Redis.
constexpr int64_t kCancelKeepMs = 600000;

}  // namespace

// The stats hash is named by the host's calendar day: a skewed host clock
// only moves a count into a neighbouring day near midnight.
std::string today_stats() { return keys::stats(day_of(now_ms())); }

std::string day_of(int64_t ms) {
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm local {};
  localtime_r(&seconds, &local);
  char text[16];
  strftime(text, sizeof(text), "%Y%m%d", &local);
  return text;
}

ScriptCall add_call_for(const std::string& next_home) {
  return {&kAddScript,
          {keys::records_prefix(), keys::bodies(), keys::due_index(), today_stats(),
           keys::timer_wake(), keys::counts(), keys::seq(), keys::fence()},
          {next_home, std::to_string(kFenceMs)}};
}

// add.lua's ARGV: two for the call, then eight per job.
constexpr size_t kAddCallArgs = 2;
constexpr size_t kAddJobArgs = 8;

void append_add(ScriptCall* call, const std::string& topic, const std::string& id,
                const std::string& body, DueTime due, const JobExpiry& expiry,
                const std::string& after_keys) {
  std::string key = job_key(topic, id);
  std::string bucket = std::to_string(keys::bucket_of(key));
  call->args.push_back(std::move(key));
  call->args.push_back(topic);
  call->args.push_back(body);
  call->args.push_back(due.relative ? "delay" : "at");
  call->args.push_back(std::to_string(due.ms));
  call->args.push_back(std::move(bucket));
  call->args.push_back(expiry.script_arg());
  call->args.push_back(after_keys);
}

size_t add_call_jobs(const ScriptCall& call) {
  return (call.args.size() - kAddCallArgs) / kAddJobArgs;
}

ScriptCall add_call(const std::string& topic, const std::string& id, const std::string& body,
                    DueTime due, const std::string& next_home) {
  ScriptCall call = add_call_for(next_home);
  append_add(&call, topic, id, body, due);
  return call;
}

ScriptCall del_call(const std::string& topic, const std::string& id, int64_t keep_ms) {
  return {&kDelScript,
          {keys::records_prefix(), keys::bodies(), keys::due_index(), keys::working(),
           keys::ready(topic), keys::dead(topic), keys::errors(), today_stats(), keys::counts(),
           keys::moving()},
          {job_key(topic, id), topic, EndMemory{0, keep_ms}.arg()}};
}

ScriptCall run_now_call(const std::string& topic, const std::string& id) {
  return {&kRunNowScript,
          {keys::records_prefix(), keys::due_index(), keys::timer_wake()},
          {job_key(topic, id)}};
}

ScriptCall update_call(const std::string& topic, const std::string& id, const std::string* body,
                       std::optional<DueTime> due, std::optional<JobExpiry> expiry) {
  std::string mode = !due ? "keep" : due->relative ? "delay" : "at";
  return {
      &kUpdateScript,
      {keys::records_prefix(), keys::bodies(), keys::due_index(), keys::timer_wake(),
       keys::working(), keys::ready(topic), keys::errors(), keys::counts(), keys::seq(),
       keys::moving(), today_stats()},
      {job_key(topic, id), topic, body ? "1" : "0", body ? *body : std::string(), std::move(mode),
       std::to_string(due ? due->ms : 0), expiry ? expiry->script_arg() : std::string("keep")}};
}

std::string pull_topics_arg(const std::vector<std::string>& pull_topics) {
  if (pull_topics.empty()) {
    return "";
  }
  std::string arg = "|";
  for (const std::string& topic : pull_topics) {
    arg += topic;
    arg += '|';
  }
  return arg;
}

ScriptCall promote_call(int limit, const std::vector<WindowHold>& holds,
                        const std::vector<std::string>& pull_topics) {
  ScriptCall call{&kPromoteScript,
                  {keys::records_prefix(), keys::due_index(), keys::consumer_wake(), keys::counts(),
                   today_stats()},
                  {std::to_string(limit), keys::ready_prefix(), pull_topics_arg(pull_topics)}};
  for (const WindowHold& hold : holds) {
    char spacing[32];
    std::snprintf(spacing, sizeof(spacing), "%.3f", hold.spacing_ms);
    call.args.push_back(hold.topic);
    call.args.push_back(std::to_string(hold.opens_at_ms));
    call.args.push_back(spacing);
  }
  return call;
}

ScriptCall requeue_expired_call(int limit, const std::vector<ExpiryTopic>& topics,
                                const EndMemory& default_memory,
                                const std::vector<std::string>& pull_topics) {
  ScriptCall call{&kRequeueExpiredScript,
                  {keys::records_prefix(), keys::working(), keys::consumer_wake(), today_stats(),
                   keys::counts(), keys::errors()},
                  {std::to_string(limit), keys::ready_prefix(), keys::dead_prefix(),
                   default_memory.arg(), pull_topics_arg(pull_topics)}};
  for (const auto& topic : topics) {
    call.args.push_back(topic.topic);
    call.args.push_back(std::string(topic.dead_callback ? "1" : "0") + "|" +
                        topic.end_memory.arg());
  }
  return call;
}

ScriptCall reserve_call(const std::string& reserve_id, const std::vector<ReserveSlot>& slots,
                        int most_jobs, int64_t most_bytes, const std::string& forget_id) {
  // Nothing to forget: a name no reserve uses.
  std::string forget = keys::lease(forget_id.empty() ? "-" : forget_id);
  ScriptCall call{&kReserveScript,
                  {keys::records_prefix(), keys::working(), keys::counts(), keys::lease(reserve_id),
                   keys::cancel(reserve_id), keys::bodies(), forget, today_stats(), keys::errors()},
                  {reserve_id, keys::ready_prefix(), std::to_string(most_jobs),
                   std::to_string(most_bytes), std::to_string(kLeaseListKeepMs)}};
  for (const auto& slot : slots) {
    call.args.push_back(slot.topic);
    call.args.push_back(std::to_string(slot.lease_ms));
    call.args.push_back(std::to_string(slot.share));
    call.args.push_back(std::to_string(slot.cap));
    call.args.push_back(std::to_string(slot.max_attempts));
    call.args.push_back(slot.end_memory);
    call.args.push_back(slot.late_policy);
    call.args.emplace_back(slot.dead_callback ? "1" : "0");
  }
  return call;
}

ScriptCall release_call(const std::string& reserve_id,
                        const std::vector<std::string>& pull_topics) {
  return {&kReleaseScript,
          {keys::records_prefix(), keys::working(), keys::counts(), keys::lease(reserve_id),
           keys::cancel(reserve_id), keys::consumer_wake()},
          {reserve_id, keys::ready_prefix(), std::to_string(kCancelKeepMs),
           pull_topics_arg(pull_topics)}};
}

ScriptCall pull_cap_call(const std::string& topic, std::vector<std::string> args) {
  return {&kPullCapScript, {keys::pull_leases(topic), keys::pull_rate(topic)}, std::move(args)};
}

ScriptCall touch_call(const std::string& topic, const std::string& id,
                      const std::string& incarnation, const std::string& reserve_id,
                      int64_t lease_ms) {
  return {&kTouchScript,
          {keys::records_prefix(), keys::working()},
          {job_key(topic, id), incarnation, reserve_id, std::to_string(lease_ms)}};
}

ScriptCall ack_call(const std::vector<AckTarget>& targets) {
  ScriptCall call{&kAckScript,
                  {keys::records_prefix(), keys::bodies(), keys::working(), keys::due_index(),
                   keys::errors(), today_stats(), keys::counts()},
                  {keys::ready_prefix(), keys::dead_prefix()}};
  call.args.reserve(2 + 7 * targets.size());
  for (const auto& target : targets) {
    std::string key = job_key(target.topic, target.id);
    std::string bucket = std::to_string(keys::bucket_of(key));
    call.args.push_back(std::move(key));
    call.args.emplace_back(target.incarnation);
    call.args.emplace_back(target.reserve_id);
    call.args.push_back(std::move(bucket));
    call.args.emplace_back(target.end_memory);
    call.args.emplace_back(target.detail);
    call.args.emplace_back(target.strict ? "1" : "0");
  }
  return call;
}

ScriptCall expire_held_call(const std::string& topic, int64_t max_retry_ms,
                            const std::string& reason, bool dead_callback, const EndMemory& memory,
                            int limit) {
  return {&kExpireHeldScript,
          {keys::records_prefix(), keys::ready(topic), keys::dead(topic), keys::errors(),
           today_stats(), keys::counts()},
          {topic, std::to_string(max_retry_ms), reason, dead_callback ? "1" : "0", memory.arg(),
           std::to_string(limit)}};
}

ScriptCall fail_call(const std::string& topic, const std::string& id,
                     const std::string& incarnation, const std::string& reserve_id,
                     int64_t retry_delay_ms, int max_attempts, const std::string& error,
                     const FailDeferral& deferral) {
  return {&kFailScript,
          {keys::records_prefix(), keys::working(), keys::due_index(), keys::dead(topic),
           keys::errors(), today_stats(), keys::timer_wake(), keys::counts()},
          {job_key(topic, id), topic, incarnation, reserve_id, std::to_string(retry_delay_ms),
           std::to_string(max_attempts), error, std::to_string(deferral.retry_after_ms),
           std::to_string(deferral.max_deferrals), deferral.count_attempt ? "1" : "0",
           deferral.dead_callback ? "1" : "0", deferral.end_memory.arg(),
           std::to_string(deferral.max_retry_ms), deferral.held_reason}};
}

ScriptCall dead_requeue_call(const std::string& topic, const std::string& id, int limit) {
  return {&kDeadRequeueScript,
          {keys::records_prefix(), keys::dead(topic), keys::due_index(), keys::errors(),
           keys::timer_wake(), today_stats(), keys::counts()},
          {topic, id.empty() ? std::string() : job_key(topic, id), std::to_string(limit)}};
}

ScriptCall dead_purge_call(const std::string& topic, int limit) {
  return {
      &kDeadPurgeScript,
      {keys::records_prefix(), keys::dead(topic), keys::errors(), keys::bodies(), keys::counts()},
      {std::to_string(limit), topic}};
}

}  // namespace dq

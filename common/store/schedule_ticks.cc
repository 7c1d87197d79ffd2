// Implements common/store/schedule_ticks.h.
#include "common/store/schedule_ticks.h"

#include <algorithm>

#include "common/core/civil_time.h"
#include "common/core/clock.h"
#include "common/core/time_text.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr int64_t kMostCounted = 100000;

int64_t next_or_none(const CronSpec& spec, int64_t after_ms) {
  return spec.next_after(after_ms).value_or(kNoTickMs);
}

// The latest tick after or at `latest` and before `before_ms`, walking forward.
int64_t walk_to(const CronSpec& spec, int64_t latest, int64_t before_ms) {
  for (auto at = spec.next_after(latest); at && *at < before_ms; at = spec.next_after(latest)) {
    latest = *at;
  }
  return latest;
}

struct Missed {
  int64_t latest = 0;  // the latest missed tick
  int64_t count = 0;   // ticks missed (counted up to kMostCounted)
};

// The ticks from `from_ms` (a tick) to before `before_ms`.
Missed missed_ticks(const CronSpec& spec, int64_t from_ms, int64_t before_ms) {
  if (spec.interval_ms() > 0) {  // "@every": multiples of the interval
    int64_t interval = spec.interval_ms();
    int64_t latest = std::max(from_ms, floor_div(before_ms - 1, interval) * interval);
    return {latest, std::min(kMostCounted, (latest - from_ms) / interval + 1)};
  }
  Missed missed{from_ms, 1};
  while (missed.count < kMostCounted) {
    auto at = spec.next_after(missed.latest);
    if (!at || *at >= before_ms) {
      return missed;
    }
    missed.latest = *at;
    ++missed.count;
  }
  // Too many to walk one by one: look back from before_ms over ever wider
  // windows (a tick found in one, the walk from it is short).
  for (int64_t window : {kDayMs, 32 * kDayMs, 400 * kDayMs}) {
    auto at = spec.next_after(std::max(missed.latest, before_ms - window));
    if (at && *at < before_ms) {
      missed.latest = walk_to(spec, *at, before_ms);
      return missed;
    }
  }
  missed.latest = walk_to(spec, missed.latest, before_ms);
  return missed;
}

}  // namespace

std::string tick_job_id(std::string_view schedule_id, int64_t tick_ms) {
  return "schedule:" + std::string(schedule_id) + ":" + format_utc_instant(tick_ms);
}

std::string schedule_home_key(std::string_view topic, std::string_view schedule_id) {
  return job_key(std::string(topic), "schedule:" + std::string(schedule_id));
}

TickPlan plan_tick(const CronSpec& spec, bool catch_up_one, int64_t stored_ms, int64_t now_ms) {
  TickPlan plan;
  int64_t missed_before = now_ms - kTickSlackMs;  // a tick before this was missed
  if (stored_ms >= missed_before) {
    plan.job_ticks.push_back(stored_ms);
    plan.next_ms = next_or_none(spec, stored_ms);
    return plan;
  }
  Missed missed = missed_ticks(spec, stored_ms, missed_before);
  if (catch_up_one) {
    plan.job_ticks.push_back(missed.latest);
  }
  plan.skipped = missed.count - (catch_up_one ? 1 : 0);
  auto on_time = spec.next_after(missed_before - 1);
  for (; on_time && *on_time <= now_ms; on_time = spec.next_after(*on_time)) {
    plan.job_ticks.push_back(*on_time);
  }
  plan.next_ms = on_time.value_or(kNoTickMs);
  return plan;
}

int64_t first_tick(const CronSpec& spec, int64_t now_ms) { return next_or_none(spec, now_ms); }

ScriptCall schedule_read_call(std::string_view schedule_id) {
  return {&kScheduleReadScript, {keys::schedule_next(schedule_id)}, {}};
}

ScriptCall schedule_tick_call(std::string_view topic, std::string_view schedule_id,
                              std::optional<int64_t> expected_ms, int64_t next_ms, int64_t skipped,
                              const std::vector<TickJob>& jobs, const std::string& next_home) {
  // add.lua's keys and its two call arguments, from the add call itself.
  ScriptCall call = add_call_for(next_home);
  call.script = &kScheduleTickScript;
  call.keys.push_back(keys::schedule_next(schedule_id));
  std::vector<std::string> args = {expected_ms ? std::to_string(*expected_ms) : std::string(),
                                   std::to_string(next_ms), std::string(topic),
                                   std::to_string(skipped)};
  args.insert(args.end(), call.args.begin(), call.args.end());
  call.args = std::move(args);
  for (const TickJob& job : jobs) {
    append_add(&call, job.topic, job.id, job.body, DueTime{false, job.tick_ms});
  }
  return call;
}

ScriptCall schedule_carry_in_call(const std::string& schedule_id, const std::string& carried) {
  return {&kScheduleCarryInScript, {keys::schedule_next(schedule_id)}, {carried}};
}

ScriptCall schedule_carry_done_call(const std::string& schedule_id, const std::string& carried) {
  return {&kScheduleCarryDoneScript, {keys::schedule_next(schedule_id)}, {carried}};
}

}  // namespace dq

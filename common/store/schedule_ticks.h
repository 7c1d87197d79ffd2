// A schedule's ticks in the store (docs/schedules.md): each tick adds one
// job, exactly once however many timers on however many hosts run.
// - A tick's job id names the schedule and the tick: "schedule:<schedule
//   id>:2026-03-30T00:00:00Z" (the instant in UTC), a normal job everywhere
//   else. Placement reads such an id by its "schedule:<schedule id>" part
//   (common/store/placement.h), so every tick's job lives on the schedule's
//   home shard, beside the schedule's next tick.
// - The next tick is a key on that shard. A timer reads it with Redis's
//   clock (schedule_read_call), plans the step here (plan_tick), and runs
//   schedule_tick.lua: "if the next tick is still T and T <= now, add the
//   job and store the next", so a timer that read a stale T changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/cron_spec.h"
#include "common/redis/script_call.h"

namespace dq {

// A tick found later than this after its instant was missed (dq was down,
// or every timer stalled): the catch-up rule decides it. Earlier it is
// added as on time. Longer than a timer's wake-up delay on a loaded host.
inline constexpr int64_t kTickSlackMs = 2000;
// Stored as the next tick of a spec with no tick within a century.
inline constexpr int64_t kNoTickMs = 253402300799000;  // 9999-12-31T23:59:59Z

// "schedule:<schedule id>:<tick, UTC>".
std::string tick_job_id(std::string_view schedule_id, int64_t tick_ms);
// The job key ("topic:schedule:<schedule id>") whose home is the schedule's.
std::string schedule_home_key(std::string_view topic, std::string_view schedule_id);

struct TickPlan {
  std::vector<int64_t> job_ticks;  // the ticks whose jobs are added, oldest first
  int64_t next_ms = 0;             // the next tick to store
  int64_t skipped = 0;             // missed ticks not added (catch-up)
};

// The step from a stored next tick `stored_ms` <= now_ms (both Redis's
// clock). On time (within kTickSlackMs of now) the tick is added and the
// next is the one after it. Missed: catch-up "one" adds the latest missed
// tick and skips the older ones, "none" adds none; the ticks of the slack
// are on time and added with it, and the next is the first after now (so a
// tick near the slack's edge is not missed by the next step for being a
// few ms older). Missed ticks are counted up to 100,000 per step.
TickPlan plan_tick(const CronSpec& spec, bool catch_up_one, int64_t stored_ms, int64_t now_ms);
// The first tick of a new schedule: the first after now.
int64_t first_tick(const CronSpec& spec, int64_t now_ms);

// Reads a schedule's next tick and Redis's clock: replies {next tick or
// '', now ms}.
ScriptCall schedule_read_call(std::string_view schedule_id);
struct ScheduleRead {
  std::optional<int64_t> next_ms;  // none stored: a new schedule
  int64_t now_ms = 0;
};

// A tick's job.
struct TickJob {
  std::string topic;
  std::string id;  // tick_job_id
  std::string body;
  int64_t tick_ms = 0;
};
// schedule_tick.lua: expected_ms nullopt starts a new schedule at next_ms.
// next_home: the job's next home while the shard list changes ("" none).
ScriptCall schedule_tick_call(std::string_view topic, std::string_view schedule_id,
                              std::optional<int64_t> expected_ms, int64_t next_ms, int64_t skipped,
                              const std::vector<TickJob>& jobs, const std::string& next_home);

// While a schedule's home changes (checker/shard_mover.h, and the timer
// that finds its previous home ahead): schedule_carry_in.lua makes its next
// tick on its home the later of the one there and `carried`;
// schedule_carry_done.lua removes it from the shard it was carried from,
// unless it changed since it was read.
ScriptCall schedule_carry_in_call(const std::string& schedule_id, const std::string& carried);
ScriptCall schedule_carry_done_call(const std::string& schedule_id, const std::string& carried);

}  // namespace dq

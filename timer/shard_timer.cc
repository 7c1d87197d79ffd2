// ShardTimer: promote due jobs, requeue expired leases, then sleep until the
// next due time (a BLPOP on the timer wake list, so an earlier job added
// meanwhile wakes it at once).
#include "timer/shard_timer.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "common/stop_flag.h"

namespace dq {
namespace {

constexpr int kRetryMs = 500;           // Redis down: retry this often
constexpr int64_t kLeaseCheckMs = 500;  // how often expired leases are looked for
constexpr int kMaxWaitMs = 500;         // a stop request is seen within this
// Redis checks BLPOP timeouts only on its cron tick (hz 10: every 100 ms), so a
// BLPOP may return up to that much after its timeout. The timer blocks on the
// wake list only until kCronSlackMs before the next due time, then sleeps
// locally in short steps, re-running promote after each (which also sees any
// earlier job added meanwhile).
constexpr int64_t kCronSlackMs = 110;
constexpr int64_t kFinalStepMs = 10;

}  // namespace

ShardTimer::ShardTimer(const Config& config, size_t shard)
    : config_(config),
      shard_(shard),
      store_(config.shards, config.redis_connect_timeout_ms, config.redis_command_timeout_ms) {}

void ShardTimer::note_outage(const Status& status) {
  if (!down_) {
    err_log().error("timer: shard {} unreachable: {} (retrying every {} ms)",
                    config_.shards[shard_].name(), status.message(), kRetryMs);
  }
  down_ = true;
}

Result<ShardTimer::Sleep> ShardTimer::round() {
  const int batch = std::max(1, config_.timer_batch);
  int64_t now = now_ms();
  std::optional<int64_t> next_due;
  while (true) {
    auto promoted = store_.promote(shard_, now, batch);
    if (!promoted.is_ok()) return promoted.status();
    next_due = promoted->next_due_ms;
    if (promoted->moved < batch || stop_requested()) break;
    now = now_ms();
  }
  if (now >= next_lease_check_ms_) {
    while (true) {
      auto requeued = store_.requeue_expired(shard_, now, batch);
      if (!requeued.is_ok()) return requeued.status();
      if (*requeued > 0) {
        err_log().warn("timer: requeued {} job(s) whose lease expired on shard {}", *requeued,
                       config_.shards[shard_].name());
      }
      if (*requeued < batch || stop_requested()) break;
    }
    next_lease_check_ms_ = now + kLeaseCheckMs;
  }
  now = now_ms();
  Sleep sleep;
  sleep.ms = std::min<int64_t>(
      {config_.timer_max_sleep_ms, kMaxWaitMs, std::max<int64_t>(0, next_lease_check_ms_ - now)});
  // A BLPOP may overrun by a Redis cron tick, so a due time within that of
  // the bound is slept to precisely as well.
  if (next_due && *next_due - now <= sleep.ms + kCronSlackMs) {
    sleep.ms = std::min(sleep.ms, std::max<int64_t>(0, *next_due - now));
    sleep.until_due = true;
  }
  return sleep;
}

void ShardTimer::run() {
  while (!stop_requested()) {
    auto sleep = round();
    if (!sleep.is_ok()) {
      note_outage(sleep.status());
      std::this_thread::sleep_for(std::chrono::milliseconds(kRetryMs));
      continue;
    }
    if (down_) {
      err_log().info("timer: shard {} reachable again", config_.shards[shard_].name());
      down_ = false;
    }
    int64_t sleep_ms = sleep->ms;
    if (sleep_ms <= 0) continue;
    if (sleep->until_due) {
      if (sleep_ms <= kCronSlackMs + kFinalStepMs) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(sleep_ms, kFinalStepMs)));
        continue;
      }
      sleep_ms -= kCronSlackMs;
    }
    auto woken = store_.wait_timer_wake(shard_, static_cast<int>(sleep_ms));
    if (!woken.is_ok()) note_outage(woken.status());
  }
}

}  // namespace dq

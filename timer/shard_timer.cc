// ShardTimer: promote due jobs, requeue expired leases, then sleep until the
// next due time (a BLPOP on the timer wake list, so an earlier job added
// meanwhile wakes it at once).
#include "timer/shard_timer.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"

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
      store_(config.shards, config.redis_connect_timeout_ms, config.redis_command_timeout_ms),
      topics_(config.sqlite_path),
      alerts_(config.sqlite_path) {}

// Every failed call (promote, requeue, the BLPOP) is followed by a pause: a
// shard that refuses commands at once (read-only, full, cannot persist)
// would otherwise spin this loop. The error is logged once, then with a
// count (common/core/repeat_log.h).
void ShardTimer::back_off(const Status& status) {
  outage_.note("timer: shard " + config_.shards[shard_].name() + ": " + status.message() +
               " (retrying every " + std::to_string(kRetryMs) + " ms)");
  std::this_thread::sleep_for(std::chrono::milliseconds(kRetryMs));
}

void ShardTimer::note_ok() {
  if (outage_.clear()) {
    err_log().info("timer: shard {} works again", config_.shards[shard_].name());
  }
}

Result<ShardTimer::Sleep> ShardTimer::round() {
  const int batch = std::max(1, config_.timer_batch);
  PromoteResult promoted;
  while (true) {
    auto moved = store_.promote(shard_, batch);
    if (!moved.is_ok()) {
      return moved.status();
    }
    promoted = *moved;
    if (promoted.moved < batch || stop_requested()) {
      break;
    }
  }
  int64_t now = monotonic_ms();
  if (now >= next_lease_check_ms_) {
    // Jobs of these topics that die get a dead-letter callback.
    topics_.refresh_if_older(config_.registry_refresh_ms);
    std::vector<std::string> called_back;
    for (const auto& [name, topic] : topics_.all()) {
      if (!topic.dead_callback.empty()) {
        called_back.push_back(name);
      }
    }
    while (true) {
      auto expired = store_.requeue_expired(shard_, batch, called_back);
      if (!expired.is_ok()) {
        return expired.status();
      }
      if (expired->requeued > 0) {
        err_log().warn("timer: requeued {} job(s) whose lease expired on shard {}",
                       expired->requeued, config_.shards[shard_].name());
      }
      report_dead(expired->dead);
      if (expired->requeued + static_cast<int>(expired->dead.size()) < batch || stop_requested()) {
        break;
      }
    }
    next_lease_check_ms_ = now + kLeaseCheckMs;
  }
  // Due times are on Redis's clock: measure the wait from Redis's now, and
  // sleep it on this host's monotonic clock, so a skewed host clock changes
  // nothing.
  Sleep sleep;
  sleep.ms = std::min<int64_t>(
      {config_.timer_max_sleep_ms, kMaxWaitMs, std::max<int64_t>(0, next_lease_check_ms_ - now)});
  if (promoted.next_due_ms) {
    int64_t until_due = *promoted.next_due_ms - promoted.redis_now_ms - (monotonic_ms() - now);
    // A BLPOP may overrun by a Redis cron tick, so a due time within that of
    // the bound is slept to precisely as well.
    if (until_due <= sleep.ms + kCronSlackMs) {
      sleep.ms = std::min(sleep.ms, std::max<int64_t>(0, until_due));
      sleep.until_due = true;
    }
  }
  return sleep;
}

// Jobs whose last lease expired went to the dead-letter set: log them and
// queue their topic's alert mail.
void ShardTimer::report_dead(const std::vector<std::pair<std::string, int>>& dead) {
  if (dead.empty()) {
    return;
  }
  topics_.refresh_if_older(config_.registry_refresh_ms);
  for (const auto& [key, attempts] : dead) {
    std::string topic_name;
    std::string id;
    if (!split_job_key(key, &topic_name, &id)) {
      continue;
    }
    const Topic* topic = topics_.find(topic_name);
    Topic fallback;
    fallback.name = topic_name;
    alerts_.report(topic ? *topic : fallback, id, attempts, "lease expired");
  }
}

void ShardTimer::run() {
  while (!stop_requested()) {
    auto sleep = round();
    if (!sleep.is_ok()) {
      back_off(sleep.status());
      continue;
    }
    int64_t sleep_ms = sleep->ms;
    if (sleep_ms <= 0) {
      continue;
    }
    if (sleep->until_due) {
      if (sleep_ms <= kCronSlackMs + kFinalStepMs) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(sleep_ms, kFinalStepMs)));
        continue;
      }
      sleep_ms -= kCronSlackMs;
    }
    auto woken = store_.wait_timer_wake(shard_, static_cast<int>(sleep_ms));
    if (!woken.is_ok()) {
      back_off(woken.status());  // a refused BLPOP answers at once
      continue;
    }
    note_ok();  // a whole turn worked, the blocking wait included
  }
}

}  // namespace dq

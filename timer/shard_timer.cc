// ShardTimer: promote due jobs, requeue expired leases, then sleep until the
// next due time (see shard_timer.h).
#include "timer/shard_timer.h"

#include <algorithm>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/store/end_memory.h"
#include "common/store/store_upgrade.h"

namespace dq {
namespace {

constexpr int kRetryMs = 500;           // Redis down: retry this often
constexpr int64_t kLeaseCheckMs = 500;  // how often expired leases are looked for
constexpr int kMaxWaitMs = 500;         // the longest wait between rounds
// Redis checks BLPOP timeouts only on its cron tick (hz 10: every 100 ms), so a
// BLPOP may return up to that much after its timeout. The timer blocks on the
// wake list only until kCronSlackMs before the next due time, then waits on
// the loop's own timer in short steps, running promote after each (which
// also sees any earlier job added meanwhile).
constexpr int64_t kCronSlackMs = 110;
constexpr int64_t kFinalStepMs = 10;

}  // namespace

ShardTimer::ShardTimer(const Config& config, size_t shard, event_base* base, AsyncJobStore& store,
                       AsyncJobStore& wakes, TopicCache& topics)
    : config_(config),
      shard_(shard),
      store_(store),
      wakes_(wakes),
      topics_(topics),
      alerts_(config.sqlite_path) {
  timer_.reset(evtimer_new(base, &ShardTimer::on_timer, this));
}

void ShardTimer::start() { round(); }

void ShardTimer::on_timer(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  static_cast<ShardTimer*>(self)->round();
}

void ShardTimer::after(int64_t ms) {
  timeval wait{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
  evtimer_add(timer_.get(), &wait);
}

// Every failed call (promote, requeue, the BLPOP) is followed by a pause: a
// shard that refuses commands at once (read-only, full, cannot persist)
// would otherwise spin this loop. The error is logged once, then with a
// count (common/core/repeat_log.h).
void ShardTimer::back_off(const Status& status) {
  if (stopping_) {
    return;
  }
  outage_.note("timer: shard " + config_.shards[shard_].name() + ": " + status.message() +
               " (retrying every " + std::to_string(kRetryMs) + " ms)");
  after(kRetryMs);
}

void ShardTimer::note_ok() {
  if (outage_.clear()) {
    err_log().info("timer: shard {} works again", config_.shards[shard_].name());
  }
}

void ShardTimer::round() {
  if (stopping_) {
    return;
  }
  round_started_ms_ = monotonic_ms();
  upgrade_then_promote();
}

// Until the shard says its store is current, each round first converts a
// batch (common/store/store_upgrade.h); after that it is never asked again.
void ShardTimer::upgrade_then_promote() {
  if (upgraded_) {
    upgrading_ = false;
    promote();
    return;
  }
  upgrade_store_step(*store_.connections()[shard_], std::max(1, config_.timer_batch),
                     [this](Result<bool> current) {
                       if (!current.is_ok()) {
                         return back_off(current.status());
                       }
                       upgraded_ = *current;
                       upgrading_ = !*current;
                       promote();
                     });
}

void ShardTimer::promote() {
  find_window_holds();
  store_.promote(
      shard_, std::max(1, config_.timer_batch),
      [this](Result<PromoteResult> result) { promoted(std::move(result)); }, holds_, pull_topics_);
}

// The topics whose delivery window is closed now, by Redis's clock as the
// last promote read it plus the time since (the host's own clock before
// the first). The script holds their due jobs only while Redis's now is
// before the opening, so an estimate a little late changes nothing; one a
// little early promotes a job a moment after the closing, and the
// consumers, which do not reserve a closed topic, keep it ready until the
// opening. The opening is spread at the topic's max_rate, split over the
// shards as its permits are.
void ShardTimer::find_window_holds() {
  holds_.clear();
  pull_topics_.clear();
  // A topic added or edited a moment ago is seen before its jobs fall due
  // (the lease check's refresh alone may come after the first promote).
  topics_.refresh_if_older(config_.registry_refresh_ms);
  int64_t redis_now =
      last_.redis_now_ms > 0 ? last_.redis_now_ms + (monotonic_ms() - promoted_at_ms_) : now_ms();
  for (const auto& [name, topic] : topics_.all()) {
    if (topic.pull()) {
      pull_topics_.push_back(name);  // their long polls are woken (promote.lua)
    }
    const DeliveryWindow* window = windows_.find(topic);
    if (window == nullptr || window->is_open_at(redis_now)) {
      continue;
    }
    double spacing_ms = topic.max_rate > 0
                            ? 1000.0 * static_cast<double>(config_.shards.size()) / topic.max_rate
                            : 0.0;
    holds_.push_back({name, window_opens_at(*window, redis_now), spacing_ms});
  }
}

void ShardTimer::promoted(Result<PromoteResult> result) {
  if (!result.is_ok()) {
    return back_off(result.status());
  }
  last_ = *result;
  promoted_at_ms_ = monotonic_ms();
  if (upgrading_) {
    last_.next_due_ms = last_.redis_now_ms;  // more to convert: again at once
  }
  if (last_.moved + last_.held >= std::max(1, config_.timer_batch) && !stopping_) {
    return promote();  // a full batch: more may be due
  }
  int64_t now = monotonic_ms();
  if (now < next_lease_check_ms_) {
    return sleep();
  }
  // Jobs of these topics that die get a dead-letter callback, or are
  // remembered for longer or shorter than the default dedup window.
  topics_.refresh_if_older(config_.registry_refresh_ms);
  expiry_topics_.clear();
  for (const auto& [name, topic] : topics_.all()) {
    EndMemory memory = end_memory_of(topic);
    if (!topic.dead_callback.empty() || memory.arg() != end_memory_of(Topic{}).arg()) {
      expiry_topics_.push_back({name, !topic.dead_callback.empty(), memory});
    }
  }
  requeue();
}

void ShardTimer::requeue() {
  store_.requeue_expired(
      shard_, std::max(1, config_.timer_batch),
      [this](Result<ExpiredResult> result) { requeued(std::move(result)); }, expiry_topics_,
      end_memory_of(Topic{}), pull_topics_);
}

void ShardTimer::requeued(Result<ExpiredResult> result) {
  if (!result.is_ok()) {
    return back_off(result.status());
  }
  if (result->requeued > 0) {
    err_log().warn("timer: requeued {} job(s) whose lease expired on shard {}", result->requeued,
                   config_.shards[shard_].name());
  }
  report_dead(result->dead);
  if (result->requeued + static_cast<int>(result->dead.size()) >=
          std::max(1, config_.timer_batch) &&
      !stopping_) {
    return requeue();
  }
  next_lease_check_ms_ = round_started_ms_ + kLeaseCheckMs;
  sleep();
}

// Due times are on Redis's clock: the wait is measured from Redis's now and
// slept on this host's monotonic clock, so a skewed host clock changes nothing.
void ShardTimer::sleep() {
  if (stopping_) {
    return;
  }
  int64_t now = monotonic_ms();
  int64_t sleep_ms =
      std::min<int64_t>({config_.timer_max_sleep_ms, kMaxWaitMs,
                         std::max<int64_t>(0, next_lease_check_ms_ - round_started_ms_)});
  bool until_due = false;
  if (last_.next_due_ms) {
    int64_t until = *last_.next_due_ms - last_.redis_now_ms - (now - round_started_ms_);
    // A BLPOP may overrun by a Redis cron tick, so a due time within that of
    // the bound is slept to precisely as well.
    if (until <= sleep_ms + kCronSlackMs) {
      sleep_ms = std::min(sleep_ms, std::max<int64_t>(0, until));
      until_due = true;
    }
  }
  if (sleep_ms <= 0) {
    return after(0);
  }
  if (until_due) {
    if (sleep_ms <= kCronSlackMs + kFinalStepMs) {
      return after(std::min(sleep_ms, kFinalStepMs));
    }
    sleep_ms -= kCronSlackMs;
  }
  wakes_.wait_wake(shard_, WakeList::kTimer, static_cast<int>(sleep_ms),
                   [this](const Result<bool>& woken) {
                     if (!woken.is_ok()) {
                       return back_off(woken.status());  // a refused BLPOP answers at once
                     }
                     note_ok();  // a whole turn worked, the blocking wait included
                     round();
                   });
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

}  // namespace dq

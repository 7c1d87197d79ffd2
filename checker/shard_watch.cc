// Implements the shard checking rounds (see shard_watch.h).
#include "checker/shard_watch.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "checker/alert_compose.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "common/redis/shard_health.h"

namespace dq {
namespace {

constexpr int64_t kSafetyEveryMs = 5000;

// The state a checker published before (a reload or restart), so an outage
// already alerted is not alerted again; else up since now.
CheckedShard initial_health(const ShardAddress& shard, const Result<ShardHealthReport>& earlier,
                            int64_t now) {
  if (earlier.is_ok()) {
    const CheckedShard* known = earlier->find(shard.name());
    if (known != nullptr) {
      return *known;
    }
  }
  CheckedShard health;
  health.name = shard.name();
  health.since_ms = now;
  return health;
}

}  // namespace

ShardWatch::ShardWatch(const Config& config)
    : config_(config),
      // A command waits at most half the drain timeout, so a shard that hangs
      // cannot keep the checker past a stop's or reload's drain deadline.
      timeout_ms_(std::max(1, std::min({config.redis_command_timeout_ms, config.checker_interval_ms,
                                        config.drain_timeout_ms / 2}))) {
  auto earlier = read_shard_health(config.pid_file);
  int64_t now = now_ms();
  int connect_ms = std::min(config.redis_connect_timeout_ms, timeout_ms_);
  for (const auto& shard : config.shards) {
    probes_.push_back(std::make_unique<ShardProbe>(shard, connect_ms, timeout_ms_));
    trackers_.emplace_back(initial_health(shard, earlier, now), config.checker_down_after,
                           config.checker_up_after);
  }
}

void ShardWatch::run() {
  while (!stop_requested()) {
    int64_t started = monotonic_ms();
    round();
    int64_t next = started + config_.checker_interval_ms;
    while (!stop_requested() && monotonic_ms() < next) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min<int64_t>(50, next - monotonic_ms())));
    }
  }
}

void ShardWatch::round() {
  bool with_safety = monotonic_ms() >= next_safety_mono_ms_;
  if (with_safety) {
    next_safety_mono_ms_ = monotonic_ms() + kSafetyEveryMs;
  }
  std::vector<std::future<ProbeResult>> pending;
  for (size_t i = 0; i < probes_.size(); ++i) {
    // A shard that just came back (or was never looked at) is checked for
    // safety at once, not at the next 5 s mark.
    bool safety =
        with_safety || trackers_[i].health().persistence.empty() || !trackers_[i].health().up;
    ShardProbe* probe = probes_[i].get();
    int warn = config_.memory_warn_percent;
    pending.push_back(std::async(std::launch::async,
                                 [probe, safety, warn] { return probe->probe(safety, warn); }));
  }
  ShardHealthReport report;
  report.interval_ms = config_.checker_interval_ms;
  report.checker_pid = getpid();
  for (size_t i = 0; i < pending.size(); ++i) {
    ProbeResult result = pending[i].get();
    int64_t now = now_ms();
    ShardTracker& tracker = trackers_[i];
    std::optional<ShardChange> change =
        result.ok ? tracker.record_ok(now) : tracker.record_failure(result.error, now);
    tracker.health().refuses_writes = !result.ok && result.refuses_writes;
    if (result.safety) {
      note_safety(tracker.health(), *result.safety);
    }
    if (change) {
      queue_alert(config_.shards[i], *change);
    }
    if (result.identity) {
      std::optional<DataLoss> loss = note_identity(tracker.health(), *result.identity, now);
      if (loss) {
        report_loss(config_.shards[i], *loss, now);
      }
    }
    report.shards.push_back(tracker.health());
  }
  report.updated_at_ms = now_ms();
  Status written = write_shard_health(config_.pid_file, report);
  if (!written.is_ok()) {
    health_errors_.note("checker: " + written.message());
  } else {
    health_errors_.clear();
  }
}

void ShardWatch::note_safety(CheckedShard& health, const ShardSafety& safety) {
  std::vector<std::string> problems = safety.unsafe;
  problems.insert(problems.end(), safety.warnings.begin(), safety.warnings.end());
  for (const auto& problem : problems) {
    if (std::find(health.problems.begin(), health.problems.end(), problem) ==
        health.problems.end()) {
      err_log().warn("checker: {}", problem);
    }
  }
  if (!health.problems.empty() && problems.empty()) {
    err_log().info("checker: shard {} has no safety problem any more", health.name);
  }
  health.persistence = safety.persistence;
  health.appendfsync = safety.appendfsync;
  health.rdb_save = safety.rdb_save;
  health.eviction_policy = safety.eviction_policy;
  health.used_memory = safety.used_memory;
  health.maxmemory = safety.maxmemory;
  health.connected_replicas = safety.connected_replicas;
  health.problems = problems;
}

// Jobs dq counted on the shard are gone: an error line and one alert. A
// shard that comes back empty with no job counted is only logged.
void ShardWatch::report_loss(const ShardAddress& shard, const DataLoss& loss, int64_t now) {
  if (loss.counted_jobs == 0) {
    err_log().warn(
        "checker: Redis shard {} came back without its data (identity {} is {}), with no job "
        "counted on it",
        shard.name(), loss.before, loss.now.empty() ? "gone" : "now " + loss.now);
    return;
  }
  err_log().error(
      "checker: Redis shard {} LOST ITS DATA: its identity {} is {}; the {} job(s) dq had counted "
      "on it are gone",
      shard.name(), loss.before, loss.now.empty() ? "gone" : "now " + loss.now, loss.counted_jobs);
  queue_message(shard, data_lost_alert(shard.name(), loss, now));
}

void ShardWatch::queue_alert(const ShardAddress& shard, const ShardChange& change) {
  if (change.up) {
    err_log().info("checker: Redis shard {} is up again after {}", shard.name(),
                   format_duration(change.at_ms - change.down_since_ms));
  } else {
    err_log().error("checker: Redis shard {} is down: {}", shard.name(), change.reason);
  }
  queue_message(shard, shard_change_alert(shard.name(), change, config_.checker_down_after,
                                          config_.checker_interval_ms));
}

void ShardWatch::queue_message(const ShardAddress& shard, const AlertMessage& message) {
  if (!messages_) {
    auto opened = AlertMessages::open(config_.sqlite_path);
    if (!opened.is_ok()) {
      err_log().error("checker: cannot queue the alert for shard {}: {}", shard.name(),
                      opened.status().message());
      return;
    }
    messages_ = std::move(*opened);
  }
  auto added = messages_->add(message);
  if (!added.is_ok()) {
    err_log().error("checker: cannot queue the alert for shard {}: {}", shard.name(),
                    added.status().message());
    messages_.reset();
  }
}

}  // namespace dq

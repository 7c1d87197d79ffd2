// ShardWatch: checks every shard each [checker] interval_ms (all shards at
// once, each bounded by min(interval, [redis] command_timeout_ms)), keeps
// each one's up/down state (shard_tracker.h), publishes the states in the
// shard health file after every round, logs safety problems when they
// appear, and queues one alert per up/down change and per shard that came
// back without its data (checker/shard_identity.h).
#pragma once

#include <memory>
#include <vector>

#include "checker/shard_probe.h"
#include "checker/shard_tracker.h"
#include "common/alerts/alert_messages.h"
#include "common/core/config.h"
#include "common/core/repeat_log.h"

namespace dq {

class ShardWatch {
 public:
  explicit ShardWatch(const Config& config);

  // Runs rounds until stop_requested().
  void run();
  // One round: check, update, publish, queue alerts.
  void round();

 private:
  void queue_alert(const ShardAddress& shard, const ShardChange& change);
  void report_loss(const ShardAddress& shard, const DataLoss& loss, int64_t now);
  void queue_message(const ShardAddress& shard, const AlertMessage& message);
  void note_safety(CheckedShard& health, const ShardSafety& safety);

  const Config& config_;
  int timeout_ms_;
  std::vector<std::unique_ptr<ShardProbe>> probes_;
  std::vector<ShardTracker> trackers_;
  int64_t next_safety_mono_ms_ = 0;
  std::unique_ptr<AlertMessages> messages_;
  RepeatLog health_errors_{spdlog::level::warn};  // the health file cannot be written
};

}  // namespace dq

// ShardTimer: the timer loop of one shard, on its own blocking connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/alerts/dead_letter_alerts.h"
#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/registry/topic_cache.h"
#include "common/store/job_store.h"

namespace dq {

class ShardTimer {
 public:
  ShardTimer(const Config& config, size_t shard);

  // Loops until stop_requested(). Never exits on Redis errors: it pauses
  // 500 ms after each, and logs the error once, then with a count.
  void run();

 private:
  struct Sleep {
    int64_t ms = 0;          // >= 0
    bool until_due = false;  // ends at a job's due time, so it must be precise
  };
  // One round: promote while full batches move, requeue expired leases.
  // Returns how long to sleep, or an error.
  Result<Sleep> round();
  void back_off(const Status& status);
  void note_ok();
  void report_dead(const std::vector<std::pair<std::string, int>>& dead);

  const Config& config_;
  size_t shard_;
  BlockingJobStore store_;
  TopicCache topics_;  // for the alert settings of dead-lettered jobs
  DeadLetterAlerts alerts_;
  RepeatLog outage_;
  int64_t next_lease_check_ms_ = 0;
};

}  // namespace dq

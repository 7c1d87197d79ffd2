// ShardTimer: the timer loop of one shard, on its own blocking connection.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/config.h"
#include "common/job_store.h"

namespace dq {

class ShardTimer {
 public:
  ShardTimer(const Config& config, size_t shard);

  // Loops until stop_requested(). Never exits on Redis errors: it logs once
  // per outage and retries every 500 ms.
  void run();

 private:
  // One round: promote while full batches move, requeue expired leases.
  // Returns how long to sleep (ms, >= 0) or an error.
  Result<int64_t> round();
  void note_outage(const Status& status);

  const Config& config_;
  size_t shard_;
  JobStore store_;
  bool down_ = false;
  int64_t next_lease_check_ms_ = 0;
};

}  // namespace dq

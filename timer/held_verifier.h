// HeldVerifier: settles the copies one shard holds for others (see
// common/store/placement.h). A job added while a shard S that may hold the same id
// was unreachable waits in {dq}:held:<S> on the shard that took it. Once S
// answers, claim.lua on S says whether S holds (or deleted) the id: then the
// copy is a duplicate and is removed; else S records where the id lives and
// the copy becomes an ordinary delayed job. Held sets of shards no longer in
// the config are released. Also trims old tombstones. One thread per shard
// in each timer process; several timers settling the same copy is harmless
// (settle.lua checks the copy's state and incarnation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/store/job_store.h"

namespace dq {

class HeldVerifier {
 public:
  HeldVerifier(const Config& config, size_t shard);
  void run();  // until stop_requested()

 private:
  // One pass; returns how many copies were settled.
  int pass();
  int settle_against(const std::string& against, bool in_config);
  void release_unknown_shards();
  void trim_tombstones();

  size_t shard_;
  BlockingJobStore store_;
  std::vector<std::string> names_;
  int64_t next_housekeeping_ms_ = 0;
  int64_t next_unknown_shards_ms_ = 0;
};

}  // namespace dq

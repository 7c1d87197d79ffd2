// ShardMover: moves the jobs of draining shards (Config::draining) to the
// shards that take new jobs, each to the first of those in its placement
// order, so gets and deletes find it where adds would look. Delayed,
// retrying and dead jobs move; jobs in flight or held finish where they are.
// One job's move is three scripts, each crash-safe:
//   move_mark.lua on the source: out of its due (or dead) zset, so the
//     source's timer never delivers it, and into {dq}:moving with its target;
//   move_in.lua on the target: written with its body, due, attempts,
//     deferrals, created time and last error (a pending job held for the
//     source until timer/held_verifier hears the source let it go; the same
//     id with the same body there already: moved before);
//   move_done.lua on the source: its copy removed, the moved counter grows.
// A mover that restarts finds {dq}:moving and redoes those jobs (same target).
// A delete between mark and done drops the source's copy and leaves a
// tombstone, which the held copy learns of from claim.lua (a dead job's copy
// is deleted by the mover). One host's checker moves a shard at a time: a
// lease in Redis ({dq}:mover on the source).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/core/config.h"
#include "common/store/job_store.h"
#include "common/store/move_calls.h"

namespace dq {

class ShardMover {
 public:
  explicit ShardMover(const Config& config);
  bool needed() const { return !draining_.empty(); }
  void run();  // until stop_requested()

 private:
  // One batch off `source`: how many jobs it moved (or tried); 0 when it had
  // nothing to move or another host holds the lease.
  int pass(size_t source);
  // Jobs marked before (a crash), else the next delayed, retrying or dead ones.
  std::vector<std::pair<std::string, std::string>> work(size_t source);
  std::string target_of(const std::string& key, size_t source) const;
  bool move_one(size_t source, const MarkedJob& job);

  const Config& config_;
  BlockingJobStore store_;
  std::vector<std::string> names_;
  std::vector<bool> placing_;
  std::vector<size_t> draining_;
  std::string holder_;
};

}  // namespace dq

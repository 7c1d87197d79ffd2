// ShardMover: moves the jobs of draining shards (Config::draining) to the
// shards that take new jobs, each to the first of those in its placement
// order, so gets, adds and deletes find it where adds would look. Delayed,
// retrying and dead jobs move; jobs in flight or held finish where they are.
// A batch of jobs moves in scripts that are each one state change, each
// crash-safe (docs/decisions.md, "Draining moves the shard's jobs"):
//   move_mark.lua on the source: out of their due (or dead) zsets, so the
//     source's timer never delivers them, and into {dq}:moving with their
//     target;
//   move_in.lua on each target: written with body, due, attempts,
//     deferrals, created time and last error; a pending job held for the
//     source (the same id with the same body there already: moved before);
//   move_done.lua on the source: its copies removed, the moved count grows;
//   settle.lua on each target: the held copies released, due as before.
// A mover that restarts finds {dq}:moving and redoes those jobs (same
// target). Killed between move_done and settle, the held copies are released
// by timer/held_verifier (claim.lua on the source: no longer there). A delete
// during the move flags the mark; the mover then drops the target's copy
// (move_drop.lua). One checker moves a shard at a time: a 5 s lease in the
// shard's Redis ({dq}:mover, "host:pid"), renewed every pass and taken over
// at once by a checker of the same host when its holder's pid is gone.
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
  // nothing to move or another checker holds the lease.
  int pass(size_t source);
  bool take_lease(size_t source);
  // Jobs marked before (a crash), else the next delayed, retrying or dead ones.
  std::vector<std::pair<std::string, std::string>> work(size_t source);
  std::vector<std::string> dead_keys(size_t source, size_t most);
  std::string target_of(const std::string& key, size_t source) const;
  // Writes the marked jobs on their targets and ends their moves: how many moved.
  int move_batch(size_t source, const std::vector<MarkedJob>& jobs);

  const Config& config_;
  BlockingJobStore store_;
  std::vector<std::string> names_;
  std::vector<bool> placing_;
  std::vector<size_t> draining_;
  std::string host_;
  std::string holder_;
};

}  // namespace dq

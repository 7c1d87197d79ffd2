// JobMover: moves jobs to their home shard (common/store/placement.h), a
// batch at a time, each step one script per shard and state change, each
// safe to redo after a crash (docs/decisions.md, "One home per id"):
//   move_mark.lua on the source: out of their due (or dead) zsets, so the
//     source never delivers them, and into {dq}:moving with their target;
//     their records stay, so a get, add or delete by id still finds them;
//   move_in.lua on each target: written as they were (state, body, due
//     time, attempts, deferrals, created time, last error); the same id
//     with the same body there already: moved before;
//   move_done.lua on the source: its copies removed, the moved count grows;
//   move_drop.lua on a target: the copy of a job deleted during its move.
// A job is never due on two shards (the source's copy left its due zset
// before the target's was written), and never early (its due time is
// kept). A pending job is marked only when due more than kMoveMarginMs
// from now, so a job deleted during its move is dropped from its target
// long before it could be delivered there. A source with marks left by a
// crash is finished first, with the targets it was marked for.
// Used by the checker's mover (checker/shard_mover.h) and the store upgrade
// (common/store/store_upgrade.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/store/job_store.h"
#include "common/store/move_calls.h"

namespace dq {

// How far off a pending job's due time must be for it to move now (the
// jobs due sooner are delivered where they are).
constexpr int64_t kMoveMarginMs = 10000;
constexpr int64_t kMoveAnyDue = -(int64_t{1} << 52);

class JobMover {
 public:
  // names: the shards' names, parallel to the store's shards.
  JobMover(BlockingJobStore& store, std::vector<std::string> names)
      : store_(store), names_(std::move(names)) {}

  // The moves `source` marked and did not end (a crash): job key and target,
  // at most `most`; empty when none (or the shard cannot be asked).
  std::vector<std::pair<std::string, std::string>> marked(size_t source, size_t most);
  // Marks `pairs` (job key, target shard name) on `source` (those marked
  // already keep the target they were marked for), writes them on their
  // targets and ends their moves: how many ended (moved, or dropped as
  // deleted); -1 when `source` could not be asked.
  // margin_ms: a pending job due before now + margin_ms is not marked
  // (kMoveAnyDue: none is left out, for the store upgrade, with no dq running).
  int move(size_t source, const std::vector<std::pair<std::string, std::string>>& pairs,
           int64_t margin_ms = kMoveMarginMs);

 private:
  int move_batch(size_t source, const std::vector<MarkedJob>& jobs);

  BlockingJobStore& store_;
  std::vector<std::string> names_;
};

}  // namespace dq

// ShardMover: first finishes the store upgrade of any shard the master could
// not upgrade at its start (common/store/store_upgrade.h), trying every 5 s.
// Then, while a shard moves in or drains (Config::shard_roles), moves
// the jobs whose home changed to their home (common/store/job_mover.h), and
// ends the change once none is left off its home (docs/decisions.md, "One
// home per id"):
// - a shard moving in: the jobs of every other shard whose home it is now.
//   Once a whole pass over every other shard found none (none marked, none
//   waiting: in flight, or due within kMoveMarginMs), it is made active
//   (registry state "moving" -> "active") and no host asks the ids'
//   previous homes any more;
// - a draining shard: all of its jobs. Once it holds none and has drained
//   kDrainSettleMs, it is made drained ("draining" -> "drained").
// First it fences the shards a host that has not seen the change yet may
// still place such an id on (common/store/placement.h): every other shard
// for the one moving in, the draining shard for every active one. After
// that no job can arrive off its home, so a clean pass is the end.
// Each pass over a source reads, in turn: its pending jobs by bucket
// (move_scan.lua), its in-flight and dead ones (HSCAN of the flat hash), its
// waiting ones (HSCAN of {dq}:after), then the registrations of jobs others
// wait for ({dq}:awaited, SSCAN) whose job is not there: a moved job takes
// its registrations along (move_in.lua), and those made meanwhile, or for
// a job never added, are carried to its home (dep_carry_*.lua), then the
// ended records of jobs whose home is another shard (SCAN of the keyspace;
// carried by ended_carry_*.lua, so a get or a retried add finds a job's end
// on its home after the change), and the next-tick keys of the registry's
// schedules whose home is another shard are carried there
// (schedule_carry_done.lua). Each pass resumes where the last stopped.
// One checker moves a change at a time: a 5 s lease in the changing shard's
// Redis ({dq}:mover, "host:pid"), renewed every pass and taken over at once
// by a checker of the same host when its holder's pid is gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/config.h"
#include "common/registry/topic_cache.h"
#include "common/store/job_mover.h"
#include "common/store/job_store.h"

namespace dq {

class ShardMover {
 public:
  explicit ShardMover(const Config& config);
  void run();  // until stop_requested(), or done

 private:
  // What a pass over a source reads, in this order.
  enum class Phase { kBuckets, kFlat, kWaiting, kAwaited, kEnded, kSchedules };
  // Where the pass over one source stands.
  struct Source {
    size_t shard = 0;
    Phase phase = Phase::kBuckets;
    uint32_t next_bucket = 0;
    std::string cursor = "0";  // of the scan of the phase after the buckets
    int64_t off_home = 0;  // jobs, registrations, ends and next ticks seen off their home this pass
    bool clean = false;    // the last whole pass saw none
  };

  bool take_lease();
  // Names the changing shard in the fences; false while a shard cannot be asked.
  bool fence();
  // One batch off `source`: how many jobs (or registrations) moved.
  int step(Source& source);
  int step_buckets(Source& source);
  int step_flat(Source& source);
  int step_waiting(Source& source);
  int step_awaited(Source& source);
  int step_ended(Source& source);
  int step_schedules(Source& source);
  // The next batch of a scan from source.cursor: `head` the command (and
  // its key), `tail` what follows the cursor (MATCH, COUNT); its members (a
  // hash's fields and values in turn); false when not answered. The last
  // batch of the scan moves the source on to its next phase.
  bool scan(Source& source, std::vector<std::string> head, const std::vector<std::string>& tail,
            std::vector<std::string>* found);
  // The scan of the phase ended (its cursor is back at 0): the next phase,
  // or, after the last, a new pass (clean when it saw nothing off its home).
  void next_phase(Source& source);
  // The pairs (job key, home name) of `keys` whose home is not `shard`;
  // counts them in off_home.
  std::vector<std::pair<std::string, std::string>> off_home(Source& source,
                                                            const std::vector<std::string>& keys);
  void settle_when_done();
  void clear_fences();

  const Config& config_;
  BlockingJobStore store_;
  std::vector<std::string> names_;
  std::vector<ShardRole> roles_;
  JobMover mover_;
  TopicCache topics_;               // the schedules, whose next ticks move too
  std::optional<size_t> changing_;  // the shard moving in or draining
  std::vector<Source> sources_;
  bool fenced_ = false;
  bool settled_ = false;
  std::string host_;
  std::string holder_;
};

}  // namespace dq

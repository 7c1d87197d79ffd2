// A topic's job counts as dq's stats answer them (GET /v1/topics/{t}/stats):
// one definition for the server, which sums them over shards
// (common/store/topic_stats.h), and the client library, which reads them
// (dq/client.h). The build copies this file to the client's include folder as
// dq/counts.h and installs it with dq/client.h, so it uses the standard
// library only and includes nothing of dq (common/ never includes client/).
// A classic include guard, not #pragma once: the copy and this file are two
// files with one guard, so a source that reaches both (dqctl reads
// dq/client.h and common/store/topic_stats.h) sees the structs once.
#ifndef DQ_JOB_COUNTS_H
#define DQ_JOB_COUNTS_H

#include <cstdint>

namespace dq {

// Jobs per state now, summed over the Redis shards that answered.
struct StateCounts {
  int64_t delayed = 0, ready = 0, working = 0, retrying = 0, dead = 0, held = 0;
  // Added with "after", waiting for those jobs to be delivered (state b).
  int64_t waiting = 0;
};

// Event counts: jobs added, delivered, failed attempts, dead-lettered, ...
struct EventCounts {
  int64_t added = 0, delivered = 0, failed = 0, dead = 0, deleted = 0, expired = 0, requeued = 0,
          duplicate = 0;
  // Jobs never delivered: their ttl or expire_at passed, or they were found
  // later than their topic's late_policy allows (drop_after); and pending
  // jobs changed in place (PUT).
  int64_t ttl_expired = 0, late_dropped = 0, updated = 0;
  // Schedules' ticks (schedule_tick.lua): jobs added for a tick, and
  // missed ticks not added (catch-up).
  int64_t tick_added = 0, tick_skipped = 0;
  // Due jobs held for their topic's delivery window (promote.lua): each
  // hold counts, a job held over two closings twice.
  int64_t window_held = 0;
};

}  // namespace dq

#endif  // DQ_JOB_COUNTS_H

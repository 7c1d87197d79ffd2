// A topic's job counts as dq's stats answer them (GET /v1/topics/{t}/stats):
// one definition for the server, which sums them over shards
// (common/store/topic_stats.h), and the client library, which reads them
// (dq/client.h). The build copies this file to the client's include folder as
// dq/counts.h and installs it with dq/client.h, so it uses the standard
// library only and includes nothing of dq (common/ never includes client/).
#pragma once
// A guard as well: a file that sees both this file and its copy (a unity
// batch of dqctl) would otherwise define the structs twice, as gcc takes the
// two for one `#pragma once` file only when their times of change agree.
#ifndef DQ_JOB_COUNTS_H
#define DQ_JOB_COUNTS_H

#include <cstdint>

namespace dq {

// Jobs per state now, summed over the Redis shards that answered.
struct StateCounts {
  int64_t delayed = 0, ready = 0, working = 0, retrying = 0, dead = 0, held = 0;
};

// Event counts: jobs added, delivered, failed attempts, dead-lettered, ...
struct EventCounts {
  int64_t added = 0, delivered = 0, failed = 0, dead = 0, deleted = 0, expired = 0, requeued = 0,
          duplicate = 0;
  // Due jobs held for their topic's delivery window (promote.lua): each
  // hold counts, a job held over two closings twice.
  int64_t window_held = 0;
};

}  // namespace dq

#endif  // DQ_JOB_COUNTS_H

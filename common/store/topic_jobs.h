// A topic's jobs as a whole, for `dqctl topic del`: how many it holds, and
// deleting all of them. Both walk every record bucket of every shard with
// HSCAN MATCH "<topic>:*" (topic names have no ':' and no glob characters).
// They refuse (kUnavailable, naming the shard) rather than guess when a shard
// cannot be reached.
//
// Kept apart from JobStore on purpose: it is written over today's key layout
// (common/keys.h) and is meant to be rewritten with the store.
#pragma once

#include <cstdint>
#include <string>

#include "common/core/status.h"
#include "common/store/job_store.h"

namespace dq {

// Jobs of the topic in any state, dead letters included.
Result<int64_t> count_topic_jobs(JobStore& store, const std::string& topic);

// Deletes every job of the topic (each through del.lua, in any state, dead
// letters included), then what may be left of it: stale dead-set members,
// its ready list and dead set, and its event counters (per day, totals, per
// minute: a topic created later under the same name starts from zero). Returns how
// many jobs were deleted. Checks every shard is reachable before deleting
// anything; a shard lost midway leaves its share and answers kUnavailable.
// Adds to *in_flight how many of them were being delivered: those callbacks
// are not stopped and still complete (to the callback URL they were sent to).
Result<int64_t> purge_topic_jobs(JobStore& store, const std::string& topic,
                                 int64_t* in_flight = nullptr);

}  // namespace dq

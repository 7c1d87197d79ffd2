// A topic's jobs as a whole, for `dqctl topic del`: how many it holds, and
// deleting all of them. Both walk every record bucket of every shard with
// HSCAN MATCH "<topic>:*" (topic names have no ':' and no glob characters).
// They refuse (kUnavailable, naming the shard) rather than guess when a shard
// cannot be reached; a write the shard did not answer in time is kUnknown.
// Asynchronous, over the caller's shards (common/store/shard_set.h), every
// shard at once, each page one round trip within the set's timeout_ms;
// waiting callers use common/core/loop_waiter.h.
//
// Written over today's key layout (common/store/keys.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/core/status.h"
#include "common/store/shard_set.h"

namespace dq {

// Jobs of the topic in any state, dead letters included.
void count_topic_jobs(const ShardSet& shards, const std::string& topic,
                      std::function<void(Result<int64_t>)> done);

// Deletes every job of the topic (each through del.lua, in any state, dead
// letters included), then what may be left of it: stale dead-set members,
// its ready list and dead set, and its event counters (per day, totals, per
// minute: a topic created later under the same name starts from zero). Returns how
// many jobs were deleted. Checks every shard is reachable before deleting
// anything; a shard lost midway leaves its share and answers kUnavailable.
// in_flight, when given, gains how many of them were being delivered: those
// callbacks are not stopped and still complete (to the URL they were sent to).
void purge_topic_jobs(const ShardSet& shards, const std::string& topic,
                      std::function<void(Result<int64_t>)> done,
                      std::shared_ptr<int64_t> in_flight = nullptr);

}  // namespace dq

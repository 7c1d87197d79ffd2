// Dead letters over every shard, for the HTTP API, dq-admin and dqctl:
// listing, counting, requeueing and purging a topic's dead jobs. One
// implementation, asynchronous, over the caller's shards
// (common/store/shard_set.h), every shard asked at once; waiting callers use
// common/core/loop_waiter.h.
//
// Reads: a shard that cannot be reached or does not answer within the set's
// timeout_ms is left out and named in unreachable_shards; when no shard
// answers they fail (kUnavailable). Writes (requeue, purge) run dead_requeue.lua /
// dead_purge.lua in batches on every shard; each batch has the timeout. A
// shard that was down answers kUnavailable naming it (nothing written there);
// one that did not answer a batch in time answers kUnknown naming it (that
// batch may have run). Either way the other shards' work is done and counted
// in the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/store/job.h"
#include "common/store/shard_set.h"

namespace dq {

struct DeadPage {
  std::vector<Job> jobs;  // state kDead, with body and last error; shard by shard
  int64_t total = 0;      // dead jobs of the topic on the shards that answered
  std::vector<std::string> unreachable_shards;
};

// Jobs [offset, offset+count) of the topic's dead letters, shard after shard
// (each in the order they died).
void dead_list(const ShardSet& shards, const std::string& topic, size_t offset, size_t count,
               std::function<void(Result<DeadPage>)> done);
// How many; kUnavailable naming the shards that did not answer.
void dead_count(const ShardSet& shards, const std::string& topic,
                std::function<void(Result<int64_t>)> done);
// id empty: every dead job of the topic. Returns how many went back;
// kNotFound when the one id asked for is not dead on any shard.
void dead_requeue(const ShardSet& shards, const std::string& topic, const std::string& id,
                  std::function<void(Result<int64_t>)> done);
void dead_purge(const ShardSet& shards, const std::string& topic,
                std::function<void(Result<int64_t>)> done);

}  // namespace dq

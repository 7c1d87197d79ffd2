// The answer to an add that no shard could take: 503 naming each shard that
// is out and why (Redis's refusal, dq-redis-checker's verdict, or the lost
// connection), so an operator reads the cause in the client's error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/redis/async_shard.h"
#include "common/redis/shard_health.h"

namespace dq {

// `refused`: the last refusal an add met on its way (kUnavailable from a
// shard that answered "full", "read-only"...), or ok when none.
// `job`: "topic/id", named in the answer.
Status no_shard_can_take(const std::vector<std::unique_ptr<AsyncShard>>& shards,
                         ShardHealthView& checker, const Status& refused, const std::string& job);

}  // namespace dq

// Why a shard cannot be asked now, in words an operator can act on: the lost
// connection's error or dq-redis-checker's verdict (it refuses writes, it
// lost its data...). Named in the 503 of an add, get or delete whose home
// (or other home) it is, so the client's error says which shard and why.
#pragma once

#include <string>

#include "common/redis/async_shard.h"
#include "common/redis/shard_health.h"

namespace dq {

// "Redis shard X is down: ...", or "... is down for dq-redis-checker: ...".
std::string shard_down_reason(const AsyncShard& shard, ShardHealthView& checker);

}  // namespace dq

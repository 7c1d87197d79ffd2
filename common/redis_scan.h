// Walking a shard's keyspace without blocking it: SCAN pages of at most
// 1,000 keys, where KEYS would hold Redis for the whole keyspace (store v3
// keeps ~98,000 keys per shard, the record buckets and their due zsets:
// KEYS took 14-30 ms there, a stall for every other client).
#pragma once

#include <string>
#include <vector>

#include "common/redis_sync.h"
#include "common/status.h"

namespace dq {

// Every key matching the glob `pattern`. Keys that exist throughout the walk
// are all returned; a key may be returned more than once.
Result<std::vector<std::string>> scan_keys(RedisConnection& shard, const std::string& pattern);

}  // namespace dq

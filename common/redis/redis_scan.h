// Walking a shard's keyspace, or a big hash, without blocking it: SCAN/HSCAN
// pages of at most 1,000 items, where KEYS would hold Redis for the whole
// keyspace (store v3 keeps ~98,000 keys per shard, the record buckets and
// their due zsets: KEYS took 14-30 ms there, a stall for every other client).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/redis/redis_sync.h"

namespace dq {

// One page's items as Redis sent them (keys for SCAN; field, value, ... for HSCAN).
using ScanPage = std::function<Status(const redisReply* items)>;

// Runs `head` + cursor + MATCH pattern COUNT 1000 ({"SCAN"}, {"HSCAN", hash})
// until the cursor comes back to 0, calling each() with every page. Items
// present throughout the walk are all seen; one may be seen more than once.
Status scan_pages(RedisConnection& shard, const std::vector<std::string>& head,
                  const std::string& pattern, const ScanPage& each);

// Every key matching the glob `pattern`.
Result<std::vector<std::string>> scan_keys(RedisConnection& shard, const std::string& pattern);

}  // namespace dq

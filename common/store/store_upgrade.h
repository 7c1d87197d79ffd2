// The one-time conversion of a shard written by an older store layout
// (store v2: every record in {dq}:jobs, delayed jobs in {dq}:delayed) to the
// current one (store v3, pending jobs in buckets). The version is kept in the
// shard, {dq}:store_version; docs/decisions.md, "Shards of store v2 convert themselves, once".
#pragma once

#include <functional>

#include "common/redis/async_shard.h"
#include "common/redis/redis_sync.h"
#include "common/redis/script_call.h"

namespace dq {

// store_upgrade.lua: moves up to `limit` v2 delayed records into buckets.
ScriptCall store_upgrade_call(int limit);

// Runs one batch on `shard`: true when the shard is current (nothing was or
// is left to convert), false when more batches are needed. Once a shard
// answers true, a caller never needs to ask again.
Result<bool> upgrade_store_step(RedisConnection& shard, int limit);
// The same on a loop's connection (the timer's).
void upgrade_store_step(AsyncShard& shard, int limit, std::function<void(Result<bool>)> done);

}  // namespace dq

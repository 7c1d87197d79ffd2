// The conversions of a shard written by an older store to the current one
// (docs/decisions.md, "Shards of store v2 convert themselves, once"). The version is kept in the
// shard, {dq}:store_version:
// - store v2 -> v3 (every record in {dq}:jobs, delayed jobs in
//   {dq}:delayed -> pending jobs in buckets): one shard at a time, a batch
//   per call; the timer's promote runs it until it is done;
// - store v3 -> v4 (one home per id: common/store/placement.h): across
//   shards, by upgrade_stores, which the master runs before it starts the
//   roles and the checker runs again until every shard is done.
#pragma once

#include <functional>

#include "common/core/config.h"
#include "common/redis/async_shard.h"
#include "common/redis/redis_sync.h"
#include "common/redis/script_call.h"

namespace dq {

// store_upgrade.lua 'buckets': moves up to `limit` v2 delayed records into buckets.
ScriptCall store_upgrade_call(int limit);

// Runs one batch on `shard`: true when the shard is v3 or later (nothing was
// or is left to convert), false when more batches are needed. Once a shard
// answers true, a caller never needs to ask again.
Result<bool> upgrade_store_step(RedisConnection& shard, int limit);
// The same on a loop's connection (the timer's).
void upgrade_store_step(AsyncShard& shard, int limit, std::function<void(Result<bool>)> done);

// Brings every shard of config.shards to store v4, once: on each shard not
// yet v4 it
// 1. converts v2 records (as above) and ends the moves a mover left marked;
// 2. settles each copy store v3 held (state h, {dq}:held:<shard S>) against
//    S once: a duplicate when S holds the id, or deleted it after the copy
//    was made (its tombstone, 1 s of clock slack); else it becomes an
//    ordinary delayed job;
// 3. moves every job that is not on its home (a v3 add placed a job on the
//    next shard while its home was down; a v3 registry shard took new ids
//    whose jobs stayed on their old homes) home, with the mover's scripts
//    (common/store/job_mover.h): each once, due time kept; jobs a stopped
//    dq left in flight there become delayed first;
// 4. drops the markers, tombstones and held sets, and records v4.
// Each step is safe to redo. Ok once every shard is v4; else kUnavailable
// naming the shards left and why (one that did not answer, or whose copies
// wait for one that did not, or a job whose home holds another body): call
// again later. Meanwhile a copy still held is not delivered.
Status upgrade_stores(const Config& config);

// Records the current store version on a shard dq never wrote (no key
// under {dq}), before any host places a job on it: a shard added while dq
// runs (common/registry/shard_workflow.h). Without it, the timer's first
// promote there records v3 (nothing of v2 to convert), and a later
// upgrade_stores would take the jobs the running dq holds on it for what a
// stopped v3 dq left: a job in flight made delayed again (delivered twice),
// and, by a checker whose view of the change is another host's (still
// joining, or draining), jobs moved off their home. A shard that holds a
// version, or keys of an older store, is left to upgrade_stores.
Status mark_new_store_current(RedisConnection& shard);

}  // namespace dq

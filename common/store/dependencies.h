// Dependencies between jobs: a job added with "after" waits (state
// "waiting") until every job it names was delivered (docs/delivery.md,
// "Dependencies between jobs"; the Redis layout is in
// common/store/lua/lib/prelude.lua, "Dependencies").
//
// The add registers the waiter on each awaited job's home first
// (dep_register.lua, AsyncJobStore::add), then adds it on its own home.
// Every script that ends an awaited job appends an event to its shard's
// outbox in the same step; dq-redis-checker's releaser
// (checker/dependency_loop.h) claims events for a lease (dep_claim.lua),
// hands each to the job's waiters on their shards (dep_release.lua) and
// removes it (dep_settle.lua). These are its calls, over one blocking
// connection each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/redis/redis_sync.h"
#include "common/redis/script_call.h"

namespace dq {

// The most jobs one add may wait for.
constexpr size_t kMaxAfter = 20;

// dep_register.lua for waiter_key on the shard of `awaited` (job keys
// whose home it is) and of `elsewhere` (job keys whose previous or next
// home it is while the shard list changes: registered only where the job
// is, or ended).
ScriptCall dep_register_call(const std::string& waiter_key, const std::vector<std::string>& awaited,
                             const std::vector<std::string>& elsewhere = {});

// An awaited job ended: an event of its shard's outbox.
struct DepEvent {
  std::string number;  // the event's number on its shard
  char how = 'a';      // a delivered, x dead, e expired, d deleted
  int64_t ended_at_ms = 0;
  std::string key;                   // the job's "topic:id"
  std::string why;                   // its reason ('' for a delivery)
  std::vector<std::string> waiters;  // their keys, as registered
};

struct ClaimedDepEvents {
  int64_t redis_now_ms = 0;
  std::vector<DepEvent> events;
};

// Claims up to `limit` due events for lease_ms (dep_claim.lua).
Result<ClaimedDepEvents> claim_dep_events(RedisConnection& shard, int limit, int64_t lease_ms);

// What one waiter's topic says of a dependency that did not deliver.
struct WaiterPolicy {
  bool release_on_dead = false;  // on_dependency_dead = release
  bool dead_callback = false;
  std::string end_memory;  // EndMemory::arg()
};

// dep_release.lua on the waiter's shard: "missing", "done", "waits",
// "released" or "dead".
Result<std::string> release_waiter(RedisConnection& shard, const DepEvent& event,
                                   const std::string& waiter, const WaiterPolicy& policy);

// dep_settle.lua: the waiters handled leave the job's waiter set; retry_ms
// < 0 removes the event, else it is handed out again after retry_ms.
Status settle_dep_event(RedisConnection& shard, const DepEvent& event,
                        const std::vector<std::string>& handled, int64_t retry_ms);

// dep_expire.lua: waiting jobs past their own ttl or expire_at end as
// expired. memories: pairs topic, end memory (others get default_memory).
Result<int64_t> expire_waiting(RedisConnection& shard, int limit, const std::string& default_memory,
                               const std::vector<std::string>& memories);

// Waits up to timeout_ms for a wake token of the shard's releaser
// ({dq}:wake:deps); true when one came.
Result<bool> wait_dep_wake(RedisConnection& shard, int timeout_ms);

// Events waiting in the shard's outbox: a plain ZCARD, the releaser's idle check.
Result<int64_t> pending_dep_events(RedisConnection& shard);

}  // namespace dq

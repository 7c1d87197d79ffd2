// The dead-letter callback outbox of one shard: an entry per job that died in
// a topic with a dead_callback, written by the very script that dead-lettered
// the job (fail.lua, requeue_expired.lua: dead_callback_add in the prelude),
// so a crash can never keep the job dead without its entry. dq-redis-checker
// claims due entries for a lease, POSTs them (checker/dead_callback_loop.h)
// and removes each only once a 2xx took it, or reschedules it with a wait.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/redis/redis_sync.h"

namespace dq {

struct DeadCallbackEntry {
  std::string number;  // the entry's number on its shard
  std::string topic;
  std::string id;
  std::string body;
  int attempts = 0;        // delivery attempts the job used
  std::string last_error;  // the error that made it dead
  int64_t died_at_ms = 0;  // by its shard's clock
  int64_t created_at_ms = 0;
  std::string incarnation;
  int tries = 0;  // sends of this entry that failed so far
};

struct ClaimedDeadCallbacks {
  int64_t redis_now_ms = 0;
  std::vector<DeadCallbackEntry> entries;
};

// Claims up to `limit` due entries for lease_ms under the holder name `claim`.
Result<ClaimedDeadCallbacks> claim_dead_callbacks(RedisConnection& shard, int limit,
                                                  int64_t lease_ms, const std::string& claim);
// The entry went out (a 2xx), or is given up: it is removed.
Status finish_dead_callback(RedisConnection& shard, const std::string& number);
// A send failed: the entry is due again after wait_ms (while `claim` still
// holds it). Returns whether it did.
Result<bool> retry_dead_callback(RedisConnection& shard, const std::string& number,
                                 const std::string& claim, int64_t wait_ms,
                                 const std::string& error);
// Entries waiting in the shard's outbox (tests, dqctl).
Result<int64_t> pending_dead_callbacks(RedisConnection& shard);

}  // namespace dq

// Whether a shard takes writes, asked without writing anything: ROLE (a
// replica refuses writes, and what it took would be lost at its next sync),
// then LPUSHX on a key that never exists, a write command that changes
// nothing but that Redis refuses as it refuses an add: OOM when full under
// noeviction, MISCONF when it cannot persist, READONLY on a replica
// (common/redis/redis_refusal.h). Used by dq-redis-checker and `dqd --check`.
#pragma once

#include <string>

#include "common/core/status.h"
#include "common/redis/redis_sync.h"

namespace dq {

struct WriteCheck {
  bool writable = true;
  std::string reason;  // why not, with the shard's name and Redis's words
};

// Fails only when the shard cannot be asked (down, connection lost).
Result<WriteCheck> check_shard_writable(RedisConnection& connection);

}  // namespace dq

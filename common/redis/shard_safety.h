// Shard safety: whether a Redis shard could silently drop jobs. A shard
// with neither AOF nor RDB loses everything on restart; one with RDB
// snapshots alone loses every job accepted since the last snapshot when it
// crashes; a maxmemory-policy other than noeviction deletes keys (jobs) when
// memory is full. Each is "unsafe" (dqd refuses such a shard at start unless [redis] allow_unsafe).
// Used memory above [checker] memory_warn_percent of maxmemory is a warning
// (adds start failing when it is full, nothing is lost). Every message says
// how to fix it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/redis/redis_sync.h"

namespace dq {

struct ShardSafety {
  std::string persistence;      // "aof", "rdb", "aof+rdb", "off"; "aof?" when CONFIG is refused
  std::string eviction_policy;  // maxmemory-policy, e.g. "noeviction"
  std::string appendfsync;      // "always", "everysec", "no" while AOF is on; "" off; "?" refused
  std::string rdb_save;         // CONFIG GET save, e.g. "3600 1 300 100"; "" off; "?" refused
  int64_t used_memory = 0;      // bytes
  int64_t maxmemory = 0;        // bytes; 0: no limit
  int connected_replicas = -1;  // INFO replication connected_slaves; -1 unknown
  std::vector<std::string> unsafe;    // would drop jobs silently; each with its fix
  std::vector<std::string> warnings;  // worth an operator's look; each with its fix

  bool safe() const { return unsafe.empty(); }
  Json to_json() const;
};

// Asks the shard (INFO persistence, memory and replication, CONFIG GET save). Fails only
// when the shard cannot be asked at all; a refused CONFIG GET is a warning.
Result<ShardSafety> check_shard_safety(RedisConnection& connection, int memory_warn_percent);

// "persistence off, ..." in one line: the unsafe problems, then the warnings.
std::string describe_problems(const ShardSafety& safety);

}  // namespace dq

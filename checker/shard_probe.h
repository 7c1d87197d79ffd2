// ShardProbe: one check of one shard over a connection kept between checks:
// PING within the timeout, whether it takes writes (common/store/shard_writable.h),
// its identity key and job count (checker/shard_identity.h), and, when asked,
// the safety check (persistence, eviction policy, memory;
// common/redis/shard_safety.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "checker/shard_identity.h"
#include "common/redis/redis_sync.h"
#include "common/redis/shard_safety.h"

namespace dq {

struct ProbeResult {
  bool ok = false;
  std::string error;            // why the check failed
  bool refuses_writes = false;  // failed because it refuses writes; reads still answer
  std::optional<ShardSafety> safety;
  std::optional<IdentitySeen> identity;  // read when the shard answers reads
};

class ShardProbe {
 public:
  ShardProbe(const ShardAddress& address, int connect_timeout_ms, int timeout_ms);

  ProbeResult probe(bool with_safety, int memory_warn_percent);

 private:
  RedisConnection connection_;
  int timeout_ms_;
};

}  // namespace dq

// Implements common/store/shard_reasons.h.
#include "common/store/shard_reasons.h"

namespace dq {

std::string shard_down_reason(const AsyncShard& shard, ShardHealthView& checker) {
  const std::string name = shard.address().name();
  if (!shard.up()) {
    return "Redis shard " + name + " is down: " + shard.last_error();
  }
  const CheckedShard* seen = checker.report().find(name);
  return "Redis shard " + name +
         " is down for dq-redis-checker: " + (seen != nullptr ? seen->reason : "");
}

}  // namespace dq

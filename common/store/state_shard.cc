// Implements common/store/state_shard.h.
#include "common/store/state_shard.h"

namespace dq {

size_t state_shard(const std::vector<ShardAddress>& shards, std::string_view name) {
  return shard_order(shards, name).front();
}

}  // namespace dq

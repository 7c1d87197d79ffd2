// Implements common/store/coordination_shard.h.
#include "common/store/coordination_shard.h"

#include <string>

namespace dq {

size_t coordination_shard(const std::vector<ShardAddress>& shards, std::string_view name) {
  // A prefix keeps the name's order apart from a job key's that happens to be equal.
  return shard_order(shards, std::string("coordination:") + std::string(name)).front();
}

}  // namespace dq

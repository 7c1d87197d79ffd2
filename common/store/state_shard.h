// Which shard holds a piece of state shared by every dq process and host
// (a receiver's circuit breaker, ...): the first in the placement order of
// its name, the order jobs are placed by (common/core/shard.h). Every host
// with the same shard list picks the same shard.
#pragma once

#include <string_view>
#include <vector>

#include "common/core/shard.h"

namespace dq {

// shards must not be empty.
size_t state_shard(const std::vector<ShardAddress>& shards, std::string_view name);

}  // namespace dq

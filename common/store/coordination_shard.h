// Which shard holds the state that every consumer on every host shares for
// one name (a topic's caps; any other per-name coordination state): the first
// shard in the placement order of the name (common/core/shard.h, shard_order),
// so every host with the same shard list picks the same one, and adding a
// shard moves ~1/N of the names. When that shard is unreachable the caller
// decides what is safe (docs/decisions.md, "Caps per topic").
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "common/core/shard.h"

namespace dq {

// Index into `shards` (not empty) of the shard holding `name`'s state.
size_t coordination_shard(const std::vector<ShardAddress>& shards, std::string_view name);

}  // namespace dq

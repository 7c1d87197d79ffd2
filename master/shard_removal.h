// A shard taken out of [redis] shards while it holds jobs would hide them:
// they answer 404 and are not delivered until it is listed again. A reload
// and `dqd --check` (against the running dqd's shards, from its status file)
// refuse such a list. A removed shard is asked how many jobs it holds (the
// sum of its {dq}:counts); one that cannot be asked is refused too.
#pragma once

#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/shard.h"
#include "common/core/status.h"
#include "common/store/placement.h"  // shard_names

namespace dq {

// The shards of `before` that `next` no longer lists.
std::vector<ShardAddress> removed_shards(const std::vector<ShardAddress>& before,
                                         const std::vector<ShardAddress>& next);

// kInvalid naming each removed shard that holds jobs (and how many) or that
// could not be asked; ok when every removed shard answered it holds none.
Status check_removed_shards(const std::vector<ShardAddress>& removed, const Config& next);

}  // namespace dq

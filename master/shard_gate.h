// The master's safety check of every shard, before any child starts (and
// before a reload is accepted): a shard that would silently drop jobs
// (persistence off, an evicting maxmemory-policy; common/redis/shard_safety.h) is
// refused unless [redis] allow_unsafe = yes, with a message that says how to
// fix it. Warnings (memory nearly full) are logged. A shard that cannot be
// reached now is not refused: the API answers 503 for it until it is up,
// and the redis checker reports its safety then.
#pragma once

#include "common/core/config.h"
#include "common/core/status.h"

namespace dq {

// kInvalid naming every unsafe shard and its fix; ok otherwise.
Status check_shards_before_start(const Config& config);

// Before a reload: the same, then no shard of `running` that `next` drops
// may hold jobs (master/shard_removal.h).
Status check_shards_before_reload(const Config& running, const Config& next);

}  // namespace dq

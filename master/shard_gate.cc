// Implements the master's start-time shard safety check (see shard_gate.h).
#include "master/shard_gate.h"

#include "common/core/cluster_shards.h"
#include "common/core/log.h"
#include "common/redis/redis_sync.h"
#include "common/redis/shard_safety.h"
#include "master/shard_removal.h"

namespace dq {

// The number of virtual shards is written into the cluster by the first dq
// host (SET NX) and checked by every later one: another number would look
// for pending jobs on the wrong virtual shards.
Status check_cluster_virtual_shards(const Config& config) {
  if (config.shards.empty() || !config.shards[0].cluster()) {
    return Status::ok();
  }
  RedisConnection connection(config.shards[0], config.redis_connect_timeout_ms,
                             config.redis_command_timeout_ms);
  std::string mine = std::to_string(config.shards.size());
  auto set = connection.command({"SET", kClusterVirtualShardsKey, mine, "NX"});
  auto recorded = connection.command({"GET", kClusterVirtualShardsKey});
  if (!set.is_ok() || !recorded.is_ok() || (*recorded)->type != REDIS_REPLY_STRING) {
    err_log().warn("cannot read the cluster's number of virtual shards now ({})",
                   recorded.is_ok() ? set.status().message() : recorded.status().message());
    return Status::ok();
  }
  std::string theirs((*recorded)->str, (*recorded)->len);
  if (theirs != mine) {
    return Status(Code::kInvalid, "the Redis Cluster holds dq data for " + theirs +
                                      " virtual shards, this build uses " + mine +
                                      ": refusing to start");
  }
  return Status::ok();
}

Status check_shards_before_start(const Config& config) {
  Status virtual_shards = check_cluster_virtual_shards(config);
  if (!virtual_shards.is_ok()) {
    return virtual_shards;
  }
  std::string refused;
  for (const auto& shard : config.shards) {
    RedisConnection connection(shard, config.redis_connect_timeout_ms,
                               config.redis_command_timeout_ms);
    auto safety = check_shard_safety(connection, config.memory_warn_percent);
    if (!safety.is_ok()) {
      err_log().warn(
          "cannot check Redis shard {} now ({}); the redis checker reports its safety "
          "once it answers",
          shard.name(), safety.status().message());
      continue;
    }
    for (const auto& warning : safety->warnings) {
      err_log().warn("{}", warning);
    }
    for (const auto& problem : safety->unsafe) {
      if (config.allow_unsafe_redis) {
        err_log().warn("{} (used anyway: [redis] allow_unsafe = yes)", problem);
      } else {
        refused += "\n  " + problem;
      }
    }
  }
  if (refused.empty()) {
    return Status::ok();
  }
  return Status(Code::kInvalid, "refusing Redis shards that would silently drop jobs:" + refused +
                                    "\n(to use them anyway, set allow_unsafe = yes in [redis])");
}

Status check_shards_before_reload(const Config& running, const Config& next) {
  Status safe = check_shards_before_start(next);
  return safe.is_ok() ? check_removed_shards(removed_shards(running.shards, next.shards), next)
                      : safe;
}

}  // namespace dq

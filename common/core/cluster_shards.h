// A Redis Cluster as dq's shards: the entry "cluster://host:port[,host:port...]"
// (seed nodes, each host:port[:password]) expands into kClusterVirtualShards
// virtual shards, each with its own hash tag "{dq:N}" (one slot each), which
// the rest of dq places jobs on as on any shard list. docs/decisions.md,
// "Redis Cluster: virtual shards", says why and how the number is kept.
#pragma once

#include <string>
#include <vector>

#include "common/core/shard.h"
#include "common/core/status.h"

namespace dq {

// Fixed for good: a job's virtual shard comes from rendezvous hashing over
// the virtual shards, so another number would look for pending jobs in the
// wrong places. Every dq host checks it against the number recorded in the
// cluster ({dq}:cluster:virtual_shards, written once) before it starts.
constexpr int kClusterVirtualShards = 16;

// The key, in the default tag's slot, that records the number.
inline constexpr const char* kClusterVirtualShardsKey = "{dq}:cluster:virtual_shards";

bool is_cluster_entry(const std::string& text);

// The whole shard list is the one cluster entry: its seeds are everything
// after "cluster://", comma separated (a cluster is not mixed with plain
// shards).
Result<std::vector<ShardAddress>> parse_cluster_entry(const std::string& text);

}  // namespace dq

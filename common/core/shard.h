// Redis shard addresses and the stable placement of (topic, id) over them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/core/status.h"

namespace dq {

struct ClusterSeed {
  std::string host;
  int port = 0;
};

struct ShardAddress {
  std::string host;
  int port = 6379;
  std::string password;
  // A virtual shard of a Redis Cluster (common/core/cluster_shards.h): its
  // number and the nodes to discover the cluster from. host:port is then the
  // first seed, and the connection goes to whichever node owns its tag.
  int virtual_shard = -1;
  std::vector<ClusterSeed> cluster_seeds{};

  bool cluster() const { return virtual_shard >= 0; }
  // The hash tag every key of this shard starts with: "{dq}", or "{dq:3}"
  // for virtual shard 3 of a cluster.
  std::string key_tag() const {
    return cluster() ? "{dq:" + std::to_string(virtual_shard) + "}" : "{dq}";
  }
  std::string name() const {
    return cluster() ? "cluster." + std::to_string(virtual_shard)
                     : host + ":" + std::to_string(port);
  }
};

// Parses "host:port[:password],host:port..." (spaces allowed around commas).
Result<std::vector<ShardAddress>> parse_shard_list(const std::string& text);

// Rendezvous (highest random weight) order of shard indexes for a job key:
// the first is the job's home shard, the rest are the fallbacks in order.
// Adding a shard moves only ~1/N of the keys, and every shard's rank for a key
// depends only on that shard's name and the key, never on the list's order.
std::vector<size_t> shard_order(const std::vector<ShardAddress>& shards, std::string_view job_key);

// 64-bit FNV-1a, stable across builds and machines.
uint64_t stable_hash(std::string_view data, uint64_t seed = 14695981039346656037ULL);

}  // namespace dq

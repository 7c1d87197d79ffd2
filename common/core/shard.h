// Redis shard addresses and the stable placement of (topic, id) over them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/core/status.h"

namespace dq {

struct HostPort {
  std::string host;
  int port = 0;

  std::string text() const { return host + ":" + std::to_string(port); }
};
// A node to discover a Redis Cluster from.
using ClusterSeed = HostPort;

struct ShardAddress {
  ShardAddress() = default;
  ShardAddress(std::string host_name, int port_number, std::string password_text = "")
      : host(std::move(host_name)), port(port_number), password(std::move(password_text)) {}

  // A fixed shard's address; for a Sentinel-managed shard the primary last
  // resolved (empty until then: common/redis/sentinel_lookup.h fills it).
  std::string host;
  int port = 6379;
  std::string password;
  // Set for a Sentinel-managed shard (common/core/sentinel_entry.h): the
  // master name the sentinels know it by, and the sentinels to ask.
  std::string sentinel_master;
  std::vector<HostPort> sentinels;
  // A virtual shard of a Redis Cluster (common/core/cluster_shards.h): its
  // number and the nodes to discover the cluster from. host:port is then the
  // first seed, and the connection goes to whichever node owns its tag.
  int virtual_shard = -1;
  std::vector<ClusterSeed> cluster_seeds{};

  bool is_sentinel() const { return !sentinel_master.empty(); }
  bool cluster() const { return virtual_shard >= 0; }
  // The hash tag every key of this shard starts with: "{dq}", or "{dq:3}"
  // for virtual shard 3 of a cluster.
  std::string key_tag() const {
    return cluster() ? "{dq:" + std::to_string(virtual_shard) + "}" : "{dq}";
  }
  // The shard's identity (placement, metrics, logs): stable across
  // failovers and moves, so a Sentinel-managed shard is named by its master
  // name and a cluster's virtual shard by its number.
  std::string name() const {
    if (is_sentinel()) {
      return "sentinel://" + sentinel_master;
    }
    if (cluster()) {
      return "cluster." + std::to_string(virtual_shard);
    }
    return host + ":" + std::to_string(port);
  }
};

// The addresses a shard's config names: its host:port, a Sentinel-managed
// shard's sentinels or a cluster's seeds (their nodes are known only by
// asking them).
std::vector<HostPort> configured_endpoints(const ShardAddress& shard);

// Parses "host:port[:password],host:port..." (spaces allowed around commas);
// an item may be "redis://host:port[:password]" or a Sentinel-managed shard,
// "sentinel://master-name[:password]@host:port[,host:port...]" (its sentinel
// list runs to the next item that has a scheme: common/core/sentinel_entry.h).
Result<std::vector<ShardAddress>> parse_shard_list(const std::string& text);

// A shard's part in placement while the shard list changes (docs/decisions.md,
// "One home per id"). Only one shard changes at a time, so an id is looked
// for on at most two shards: its home, and its previous or next home.
enum class ShardRole {
  kActive,    // takes new jobs: the home of the ids it ranks first for
  kJoining,   // added, its first seconds: asked about the ids it will be the
              // home of (a host that saw it moving in may have placed one
              // there), given none
  kMovingIn,  // takes new jobs; the previous home of its ids is asked too
              // until the checker moved their jobs to it
  kLeaving,   // drained, its first seconds: still takes new jobs, and the
              // next home of its ids is asked too
  kDraining,  // takes no new job; asked as the previous home of its ids until
              // the checker moved its jobs away
  kDrained,   // emptied: neither asked nor given jobs, listed until removed
};

// Rendezvous (highest random weight) order of shard indexes for a job key:
// the first is the job's home shard, the rest are the fallbacks in order.
// Adding a shard moves only ~1/N of the keys, and every shard's rank for a key
// depends only on that shard's name and the key, never on the list's order.
// Of a Redis Cluster's virtual shards only the key's home is in the order.
std::vector<size_t> shard_order(const std::vector<ShardAddress>& shards, std::string_view job_key);

// 64-bit FNV-1a, stable across builds and machines.
uint64_t stable_hash(std::string_view data, uint64_t seed = 14695981039346656037ULL);

}  // namespace dq

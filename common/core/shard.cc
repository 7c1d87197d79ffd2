#include "common/core/shard.h"

#include <algorithm>
#include <cstdint>

#include "common/core/cluster_shards.h"
#include "common/core/config.h"
#include "common/core/redact.h"
#include "common/core/sentinel_entry.h"
#include "common/core/text_list.h"

namespace dq {

namespace {

// "host:port[:password]", with an optional "redis://" in front.
Result<ShardAddress> parse_plain_shard(const std::string& item) {
  ShardAddress shard;
  std::string text = item.rfind(kRedisScheme, 0) == 0 ? item.substr(kRedisScheme.size()) : item;
  // host:port[:password]; the password may itself contain ':'.
  size_t first = text.find(':');
  if (first == std::string::npos) {
    return Status(Code::kInvalid, "shard '" + redact_shard_text(item) + "' needs host:port");
  }
  size_t second = text.find(':', first + 1);
  std::string host_port = second == std::string::npos ? text : text.substr(0, second);
  if (second != std::string::npos) {
    shard.password = text.substr(second + 1);
  }
  if (!parse_host_port(host_port, &shard.host, &shard.port)) {
    return Status(Code::kInvalid,
                  "shard '" + redact_shard_text(item) + "' is not host:port[:password]");
  }
  return shard;
}

}  // namespace

Result<std::vector<ShardAddress>> parse_shard_list(const std::string& text) {
  if (is_cluster_entry(text)) {
    return parse_cluster_entry(text);
  }
  std::vector<ShardAddress> shards;
  std::vector<std::string> items = split_list(text);
  for (size_t i = 0; i < items.size(); ++i) {
    auto shard =
        is_sentinel_entry(items[i]) ? parse_sentinel_entry(items, &i) : parse_plain_shard(items[i]);
    if (!shard.is_ok()) {
      return shard.status();
    }
    for (const auto& existing : shards) {
      if (existing.name() == shard->name()) {
        return Status(Code::kInvalid, "shard " + shard->name() + " is listed twice");
      }
    }
    shards.push_back(*shard);
  }
  return shards;
}

std::vector<HostPort> configured_endpoints(const ShardAddress& shard) {
  if (shard.is_sentinel()) {
    return shard.sentinels;
  }
  if (shard.cluster()) {
    return shard.cluster_seeds;
  }
  return {HostPort{shard.host, shard.port}};
}

uint64_t stable_hash(std::string_view data, uint64_t seed) {
  uint64_t hash = seed;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  // Final avalanche (splitmix64) so similar names spread well.
  hash ^= hash >> 30;
  hash *= 0xbf58476d1ce4e5b9ULL;
  hash ^= hash >> 27;
  hash *= 0x94d049bb133111ebULL;
  hash ^= hash >> 31;
  return hash;
}

std::vector<size_t> shard_order(const std::vector<ShardAddress>& shards, std::string_view job_key) {
  std::vector<std::pair<uint64_t, size_t>> ranked;
  ranked.reserve(shards.size());
  uint64_t key_hash = stable_hash(job_key);
  for (size_t i = 0; i < shards.size(); ++i) {
    ranked.emplace_back(stable_hash(shards[i].name(), key_hash), i);
  }
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> order;
  order.reserve(ranked.size());
  bool cluster_ranked = false;
  for (const auto& entry : ranked) {
    // A cluster's virtual shards are a fixed set, so a key's home among them
    // never changes and no other one of them can hold it: it is the only one
    // ranked. A node that is down is the cluster's to fail over, and no add
    // or delete asks the other virtual shards (one job per id, no
    // cross-node lookup).
    if (shards[entry.second].cluster()) {
      if (cluster_ranked) {
        continue;
      }
      cluster_ranked = true;
    }
    order.push_back(entry.second);
  }
  return order;
}

}  // namespace dq

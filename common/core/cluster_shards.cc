#include "common/core/cluster_shards.h"

#include "common/core/config.h"
#include "common/core/redact.h"
#include "common/core/text_list.h"

namespace dq {
namespace {

constexpr const char* kScheme = "cluster://";

}  // namespace

bool is_cluster_entry(const std::string& text) { return text.find(kScheme) != std::string::npos; }

Result<std::vector<ShardAddress>> parse_cluster_entry(const std::string& text) {
  std::string rest = text;
  size_t start = rest.find_first_not_of(" \t");
  if (start == std::string::npos || rest.compare(start, 10, kScheme) != 0) {
    return Status(Code::kInvalid,
                  "a cluster:// entry must be the only shard entry (its seeds follow it, comma "
                  "separated)");
  }
  rest = rest.substr(start + 10);
  if (rest.find(kScheme) != std::string::npos) {
    return Status(Code::kInvalid, "only one cluster:// entry may be listed");
  }
  std::vector<ClusterSeed> seeds;
  std::string password;
  for (const std::string& item : split_list(rest)) {
    size_t first = item.find(':');
    size_t second = first == std::string::npos ? first : item.find(':', first + 1);
    std::string host_port = second == std::string::npos ? item : item.substr(0, second);
    ClusterSeed seed;
    if (!parse_host_port(host_port, &seed.host, &seed.port)) {
      return Status(Code::kInvalid,
                    "cluster seed '" + redact_shard_text(item) + "' is not host:port[:password]");
    }
    if (second != std::string::npos) {
      std::string given = item.substr(second + 1);
      if (!password.empty() && given != password) {
        return Status(Code::kInvalid, "cluster seeds name different passwords");
      }
      password = given;
    }
    seeds.push_back(seed);
  }
  if (seeds.empty()) {
    return Status(Code::kInvalid, "cluster:// needs at least one seed host:port");
  }
  std::vector<ShardAddress> shards;
  for (int i = 0; i < kClusterVirtualShards; ++i) {
    ShardAddress shard;
    shard.host = seeds[0].host;
    shard.port = seeds[0].port;
    shard.password = password;
    shard.virtual_shard = i;
    shard.cluster_seeds = seeds;
    shards.push_back(std::move(shard));
  }
  return shards;
}

}  // namespace dq

// Implements common/core/sentinel_entry.h.
#include "common/core/sentinel_entry.h"

#include "common/core/config.h"
#include "common/core/redact.h"

namespace dq {

bool is_sentinel_entry(const std::string& item) { return item.rfind(kSentinelScheme, 0) == 0; }

Result<ShardAddress> parse_sentinel_entry(const std::vector<std::string>& items, size_t* index) {
  const std::string& item = items[*index];
  std::string rest = item.substr(kSentinelScheme.size());
  size_t at = rest.find('@');
  if (at == std::string::npos) {
    return Status(Code::kInvalid, "shard '" + redact_shard_text(item) +
                                      "' is not sentinel://master-name[:password]@host:port"
                                      "[,host:port...]");
  }
  ShardAddress shard;
  std::string name = rest.substr(0, at);
  size_t colon = name.find(':');
  if (colon != std::string::npos) {
    shard.password = name.substr(colon + 1);
    name.resize(colon);
  }
  if (name.empty() || name.find_first_of(" \t/") != std::string::npos) {
    return Status(Code::kInvalid,
                  "shard '" + redact_shard_text(item) + "' needs a master name after sentinel://");
  }
  shard.sentinel_master = name;
  std::vector<std::string> hosts = {rest.substr(at + 1)};
  while (*index + 1 < items.size() && items[*index + 1].find("://") == std::string::npos) {
    hosts.push_back(items[++*index]);
  }
  for (const std::string& text : hosts) {
    HostPort sentinel;
    if (!parse_host_port(text, &sentinel.host, &sentinel.port)) {
      return Status(Code::kInvalid,
                    "shard sentinel://" + name + ": sentinel '" + text + "' is not host:port");
    }
    for (const auto& existing : shard.sentinels) {
      if (existing.text() == sentinel.text()) {
        return Status(Code::kInvalid,
                      "shard sentinel://" + name + " lists sentinel " + text + " twice");
      }
    }
    shard.sentinels.push_back(sentinel);
  }
  // host/port stay empty until a lookup resolves the primary.
  shard.host.clear();
  shard.port = 0;
  return shard;
}

}  // namespace dq

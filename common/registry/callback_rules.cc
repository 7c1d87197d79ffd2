#include "common/registry/callback_rules.h"

#include "common/core/shard.h"
#include "common/registry/callback_url.h"

namespace dq {

Status check_callback_url(const Config& config, Registry& registry, const std::string& url) {
  CallbackPolicy policy = CallbackPolicy::from_config(config);
  auto extra = registry.list_extra_shards();
  if (extra.is_ok()) {
    for (const auto& entry : *extra) {
      auto shards = parse_shard_list(entry);
      if (!shards.is_ok()) {
        continue;
      }
      for (const auto& shard : *shards) {
        for (const auto& endpoint : configured_endpoints(shard)) {
          policy.forbid(endpoint.host, endpoint.port, "Redis shard " + shard.name());
        }
      }
    }
  }
  return policy.check_url(url);
}

}  // namespace dq

#include "common/registry/callback_rules.h"

#include "common/core/shard.h"
#include "common/registry/callback_url.h"

namespace dq {

CallbackPolicy callback_policy(const Config& config, Registry& registry) {
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
  return policy;
}

Status check_callback_url(const Config& config, Registry& registry, const std::string& url) {
  return callback_policy(config, registry).check_url(url);
}

}  // namespace dq

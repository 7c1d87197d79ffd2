// The callback URL rules a topic's URL is checked against when it is
// registered or changed (the admin page, dqctl): the config's rules
// (common/registry/callback_url.h) with every Redis shard added in the
// registry forbidden too, as the config's own shards are.
#pragma once

#include <string>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/registry/callback_url.h"
#include "common/registry/registry.h"

namespace dq {

// The config's rules with the registry's Redis shards forbidden too.
CallbackPolicy callback_policy(const Config& config, Registry& registry);

// kInvalid naming the rule the URL breaks; ok otherwise.
Status check_callback_url(const Config& config, Registry& registry, const std::string& url);

}  // namespace dq

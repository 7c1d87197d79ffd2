// The signing flags of `dqctl topic add|set` (docs/callbacks.md):
//   --signing-secret generate|whsec_...|off   HMAC-SHA256 ("v1") signing
//   --signing-ed25519 generate|off            Ed25519 ("v1a") signing
//   --overlap DURATION                        how long a replaced key is still
//                                             sent (90s, 30m, 24h, 7d; default 24h)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq::ctl {

struct SigningFlags {
  std::optional<std::string> secret;
  std::optional<std::string> ed25519;
  std::optional<int64_t> overlap_ms;

  bool any() const { return secret || ed25519 || overlap_ms; }
  // Takes `arg` when it is one of the flags above: true, with *error set when
  // its value is bad. False for any other flag.
  bool take(const std::string& arg, const std::string& value, std::string* error);
  // Applies the flags through set_topic_signing (common/registry/topic_json.h).
  Status apply(Topic* topic, int64_t now_ms) const;
};

// "30m", "24h", "7d", "90s" or plain seconds, in ms; nullopt when unreadable.
std::optional<int64_t> parse_duration_ms(const std::string& text);

}  // namespace dq::ctl

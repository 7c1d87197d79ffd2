// The options of `dqctl topic add|set` (client/dqctl/cmd_topic.cc): parsed
// from the command line, then applied to a topic read from the registry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq::ctl {

// The signing flags of `dqctl topic add|set` (docs/callbacks.md):
//   --signing-secret generate|whsec_...|off   HMAC-SHA256 ("v1") signing
//   --signing-ed25519 generate|off            Ed25519 ("v1a") signing
//   --overlap DURATION                        how long a replaced key is still
//                                             sent (90s, 30m, 24h, 7d; default 24h)
// (client/dqctl/topic_signing_flags.cc)
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

// Options of `add` and `set`; only the given ones are applied.
struct TopicOptions {
  std::optional<std::string> callback_url;
  std::optional<std::string> method;
  std::optional<int> timeout_ms;
  std::optional<int64_t> default_delay_s;
  std::optional<int> max_attempts;
  std::optional<int> priority;
  std::optional<std::string> alert_emails;
  std::optional<std::string> retry_ms;
  std::optional<std::string> creator;
  std::optional<std::string> callback_format;
  std::optional<std::string> success_json;
  std::optional<int> max_deferrals;
  std::optional<std::string> dead_on;
  std::optional<int> retry_jitter;
  std::optional<bool> circuit_breaker;
  std::optional<int> circuit_failures;
  std::optional<int> circuit_open_ms;
  std::optional<int> max_in_flight;
  std::optional<int> max_rate;
  std::optional<int> max_burst;
  std::optional<std::string> dead_callback;  // "" (or "off" on the command line): none
  SigningFlags signing;

  bool any() const {
    return callback_url || method || timeout_ms || default_delay_s || max_attempts || priority ||
           alert_emails || retry_ms || creator || callback_format || success_json ||
           max_deferrals || dead_on || retry_jitter || circuit_breaker || circuit_failures ||
           circuit_open_ms || max_in_flight || max_rate || max_burst || signing.any() ||
           dead_callback;
  }
  Status apply(Topic* topic) const {
    if (callback_url) {
      topic->callback_url = *callback_url;
    }
    if (method) {
      topic->method = *method;
    }
    if (timeout_ms) {
      topic->timeout_ms = *timeout_ms;
    }
    if (default_delay_s) {
      topic->default_delay_s = *default_delay_s;
    }
    if (max_attempts) {
      topic->max_attempts = *max_attempts;
    }
    if (priority) {
      topic->priority = *priority;
    }
    if (alert_emails) {
      topic->alert_emails = *alert_emails;
    }
    if (retry_ms) {
      topic->retry_ms = *retry_ms;
    }
    if (creator) {
      topic->creator = *creator;
    }
    if (callback_format) {
      topic->callback_format = *callback_format;
    }
    if (success_json) {
      topic->success_json = *success_json;
    }
    if (max_deferrals) {
      topic->max_deferrals = *max_deferrals;
    }
    if (dead_on) {
      topic->dead_on = *dead_on;  // "" clears it
    }
    if (retry_jitter) {
      topic->retry_jitter = *retry_jitter;
    }
    if (circuit_breaker) {
      topic->circuit_breaker = *circuit_breaker;
    }
    if (circuit_failures) {
      topic->circuit_failures = *circuit_failures;
    }
    if (circuit_open_ms) {
      topic->circuit_open_ms = *circuit_open_ms;
    }
    if (max_in_flight) {
      topic->max_in_flight = *max_in_flight;
    }
    if (max_rate) {
      topic->max_rate = *max_rate;
    }
    if (max_burst) {
      topic->max_burst = *max_burst;
    }
    if (dead_callback) {
      topic->dead_callback = *dead_callback;
    }
    return signing.apply(topic, now_ms());
  }
};

// Splits args into the topic NAME and (when options != nullptr) the options
// of add/set. Prints the problem and returns false on a usage error.
bool parse_topic_args(const std::string& sub, const std::vector<std::string>& args,
                      std::string* name, TopicOptions* options);

}  // namespace dq::ctl

// Posts one JSON object to a webhook URL (a chat bot, an incident tool) with
// libcurl. Any 2xx is accepted; anything else is a failure the caller retries.
// An alert webhook obeys the callback URL rules (common/registry/callback_url.h):
// never a link-local (metadata) address, a Redis shard or one of dq's own
// listeners, however written, checked when it is set and again, after DNS,
// at every send. What the server answered is reduced to its status and the
// call's time: its body is never shown, logged or stored (it may be anything
// the URL reaches), and the URL appears in messages as its origin only (a
// chat webhook's path is its secret).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/callback_url.h"
#include "common/registry/registry.h"

namespace dq {

// The rules an alert webhook obeys: those of a topic's callback (the config's
// shards and listeners, the registry's shards, link-local addresses), without
// [consumer] callback_allow_hosts, which names the topics' receivers.
CallbackPolicy webhook_policy(const Config& config, Registry& registry);

// kInvalid "webhook_url: ..." naming the rule the URL breaks; ok for "" (off).
Status check_webhook_url(const CallbackPolicy& policy, const std::string& url);

// A POST that a server took: its status and how long the call took.
struct Posted {
  long status = 0;
  int64_t took_ms = 0;
  std::string text() const;  // "HTTP 200 in 12 ms"
};

// check_webhook_url, then the POST with every address it connects to
// checked. kInvalid when the rules refuse it; kUnavailable with the status
// or curl's error otherwise. timeout_ms bounds the whole call.
Result<Posted> post_webhook(const std::string& url, const Json& payload, int timeout_ms,
                            const CallbackPolicy& policy);

// The same POST of a JSON text with extra headers ("Name: value"); with a
// policy, every address it connects to is checked as a callback's is.
// Errors name the URL's origin as `what`.
Result<Posted> post_json(const std::string& url, const std::string& body,
                         const std::vector<std::string>& headers, int timeout_ms,
                         const CallbackPolicy* policy = nullptr,
                         const std::string& what = "webhook");

}  // namespace dq

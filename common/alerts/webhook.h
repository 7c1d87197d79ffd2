// Posts one JSON object to a webhook URL (a chat bot, an incident tool) with
// libcurl. Any 2xx is accepted; anything else is a failure the caller retries.
#pragma once

#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/callback_url.h"

namespace dq {

// Returns "HTTP <status>: <start of the answer>" on a 2xx; kUnavailable with
// the status or curl's error otherwise. timeout_ms bounds the whole call.
Result<std::string> post_webhook(const std::string& url, const Json& payload, int timeout_ms);

// The same POST of a JSON text with extra headers ("Name: value"); with a
// policy, every address it connects to is checked as a callback's is
// (common/registry/callback_url.h). Errors name the URL as `what`.
Result<std::string> post_json(const std::string& url, const std::string& body,
                              const std::vector<std::string>& headers, int timeout_ms,
                              const CallbackPolicy* policy = nullptr,
                              const std::string& what = "webhook");

}  // namespace dq

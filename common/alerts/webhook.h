// Posts one JSON object to a webhook URL (a chat bot, an incident tool) with
// libcurl. Any 2xx is accepted; anything else is a failure the caller retries.
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

// Returns "HTTP <status>: <start of the answer>" on a 2xx; kUnavailable with
// the status or curl's error otherwise. timeout_ms bounds the whole call.
Result<std::string> post_webhook(const std::string& url, const Json& payload, int timeout_ms);

}  // namespace dq

// CallbackRequest: what one delivery sends to a topic's callback URL.
//   POST: JSON {"topic","id","body","attempt","due_at_ms","created_at_ms"}
//         with the stored body embedded as JSON (not as a string).
//   GET:  the same fields as query parameters (body as JSON text).
// Both carry X-DQ-Topic, X-DQ-Id and X-DQ-Attempt headers.
#pragma once

#include <string>
#include <vector>

#include "common/job.h"
#include "common/registry.h"

namespace dq {

struct CallbackRequest {
  bool post = true;
  std::string url;
  std::string body;                  // POST only
  std::vector<std::string> headers;  // "Name: value"
};

CallbackRequest build_callback_request(const Topic& topic, const Job& job);

// The JSON document a POST callback receives.
std::string callback_json(const Job& job);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string url_encode(const std::string& text);

}  // namespace dq

// CallbackRequest: what one delivery sends to a topic's callback URL.
//   POST: JSON {"topic","id","body","attempt","due_at_ms","created_at_ms"}
//         with the stored body embedded as JSON (not as a string).
//   GET:  the same fields as query parameters (body as JSON text).
// A topic with callback_format "form" sends what the PHP delay queue sent:
//   POST: application/x-www-form-urlencoded, one field per top-level key of
//         the body, plus notify_time, dq_set_time and, on retries,
//         exp_notify_nums (common/http/php_fields.h);
//   GET:  the same fields as query parameters.
// All carry X-DQ-Topic, X-DQ-Id and X-DQ-Attempt headers; a topic with
// signing keys adds the Standard Webhooks headers webhook-id,
// webhook-timestamp and webhook-signature (common/http/webhook_signature.h).
#pragma once

#include <string>
#include <vector>

#include "common/registry/registry.h"
#include "common/store/job.h"

namespace dq {

struct CallbackRequest {
  bool post = true;
  std::string url;
  std::string body;                  // POST only
  std::vector<std::string> headers;  // "Name: value"
};

// Fills *request for one delivery of `job`. It reuses the request's
// buffers, so a pooled delivery (consumer_loop.h) builds its next JSON POST
// without allocating.
void build_callback_request(const Topic& topic, const Job& job, CallbackRequest* request);

// The JSON document a POST callback receives.
std::string callback_json(const Job& job);
// The same, appended to *out.
void append_callback_json(const Job& job, std::string* out);

// The form fields (url-encoded, joined by '&') a "form" callback sends.
std::string callback_form(const Job& job);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string url_encode(const std::string& text);

}  // namespace dq

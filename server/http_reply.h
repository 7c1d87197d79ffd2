// Sending HTTP answers from evhttp handlers: JSON bodies, error bodies
// {"error": "..."}, and the mapping from a Status code to an HTTP status.
#pragma once

#include <event2/http.h>

#include <string>

#include "common/json.h"
#include "common/status.h"

namespace dq {

int http_status_of(Code code);
void reply_json(evhttp_request* request, int status, const Json& body);
void reply_error(evhttp_request* request, int status, const std::string& message);
void reply_status(evhttp_request* request, const Status& status);  // non-ok only
void reply_text(evhttp_request* request, int status, const std::string& content_type,
                const std::string& text);

}  // namespace dq

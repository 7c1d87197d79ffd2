// Sending HTTP answers from evhttp handlers: JSON bodies, error bodies
// {"error": "..."} (a Status's HTTP status: common/http_status.h).
#pragma once

#include <event2/http.h>

#include <string>

#include "common/http_status.h"  // http_status_of, for the handlers
#include "common/json.h"
#include "common/status.h"

namespace dq {

void reply_json(evhttp_request* request, int status, const Json& body);
// A JSON answer already serialized (a newline is added, as reply_json does).
void reply_json_text(evhttp_request* request, int status, const std::string& json_text);
// Compact JSON; bytes that are not UTF-8 become U+FFFD instead of throwing.
std::string dump_json(const Json& json);
void reply_error(evhttp_request* request, int status, const std::string& message);
void reply_status(evhttp_request* request, const Status& status);  // non-ok only
void reply_text(evhttp_request* request, int status, const std::string& content_type,
                const std::string& text);

}  // namespace dq

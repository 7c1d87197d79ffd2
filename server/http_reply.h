// Writing HTTP/1.1 answers: the whole answer (status line, Content-Type,
// Content-Length, a Date formatted once a second, Connection when needed,
// extra headers, body) goes into one buffer, written with one call.
#pragma once

#include <string>
#include <string_view>

#include "common/core/http_status.h"  // http_status_of, for the handlers
#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

// "OK", "Not Found", ... for the statuses dq answers with.
const char* reason_of(int status);

// Compact JSON; bytes that are not UTF-8 become U+FFFD instead of throwing.
std::string dump_json(const Json& json);

// The current time as an HTTP Date value, formatted at most once a second.
std::string_view http_date();

struct ReplyHead {
  int status = 200;
  std::string_view content_type = "application/json";
  // "Connection: close" (close), "Connection: keep-alive" (an HTTP/1.0
  // client that asked to keep it), or none (HTTP/1.1's default).
  bool close = false;
  bool keep_alive_header = false;
  std::string_view extra_headers;  // whole lines, each ending in CR LF
  bool head_only = false;          // a HEAD request: no body, same Content-Length
  std::string_view body_suffix;    // written after the body (a JSON answer's newline)
};

// Appends the whole answer to *out.
void append_reply(std::string* out, const ReplyHead& head, std::string_view body);

}  // namespace dq

// Reading an evhttp request, for every role that serves HTTP (dq-server's
// API, dq-admin): its method's name, its decoded path, its body and its
// query string parameters.
#pragma once

#include <event2/http.h>

#include <string>
#include <vector>

namespace dq {

// "GET", "POST", "DELETE", "PUT", "HEAD", or "OTHER".
const char* method_name(evhttp_cmd_type method);

// Splits "/v1/topics/a/jobs" into {"v1","topics","a","jobs"}, then
// percent-decodes each part: "/jobs/a%2Fb" names the id "a/b". A '+' stays a
// '+' (only query strings use it for a space). nullptr: no parts.
std::vector<std::string> path_parts(const char* path);
std::vector<std::string> path_parts(std::string_view path);

// The request body, as received.
std::string request_body(evhttp_request* request);

// The decoded value of `name` in the request's query string ("" when absent).
std::string query_value(evhttp_request* request, const char* name);
// The same in a query string ("a=1&b=2", without the '?').
std::string query_value(const std::string& query, const char* name);

// An optional whole number 0..999999999 from a query string: empty keeps
// *out; anything else (a sign, letters, too many digits) is false.
bool parse_count(const std::string& text, long* out);

}  // namespace dq

// Reading query string parameters of an evhttp request (dq-server, dq-admin).
#pragma once

#include <event2/http.h>

#include <string>

namespace dq {

// The decoded value of `name` in the request's query string ("" when absent).
std::string query_value(evhttp_request* request, const char* name);

// An optional whole number 0..999999999 from a query string: empty keeps
// *out; anything else (a sign, letters, too many digits) is false.
bool parse_count(const std::string& text, long* out);

}  // namespace dq

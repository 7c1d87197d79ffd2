// A topic's success rule beside "any 2xx": PATH=VALUE, e.g. "code=0" or
// "data.status=ok". Many internal APIs answer 200 with an error code in the
// body; the PHP delay queue's re_notify_flag served the same purpose.
#pragma once

#include <string>
#include <vector>

#include "common/core/status.h"

namespace dq {

struct SuccessRule {
  std::vector<std::string> path;  // "data.status" -> {"data", "status"}
  std::string value;              // the text after the first '='
};

// Parses "PATH=VALUE": PATH is one or more dot-separated keys (each 1-64
// bytes, no '=' or whitespace); VALUE is any text up to 256 bytes (may be
// empty). kInvalid says what is wrong.
Result<SuccessRule> parse_success_rule(const std::string& text);

// True when `response` is a JSON object holding VALUE at PATH. A string
// matches its text ("0" matches code=0), a number its numeric value
// (0, 0.0 and -0 match code=0), true/false/null their JSON spelling, an
// object or array its compact JSON text. Otherwise false, and *why says
// what the body held instead (for the attempt's error text).
bool response_matches(const SuccessRule& rule, const std::string& response, std::string* why);

}  // namespace dq

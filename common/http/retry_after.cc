// Implements common/http/retry_after.h. Dates are read by libcurl's
// curl_getdate, which knows the three HTTP-date forms.
#include "common/http/retry_after.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace dq {

std::optional<int64_t> parse_retry_after(std::string_view value, int64_t now_ms) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r' ||
                            value.back() == '\n')) {
    value.remove_suffix(1);
  }
  if (value.empty()) {
    return std::nullopt;
  }
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    // delta-seconds; a huge number is just "long": cut, not refused.
    if (value.size() > 9) {
      return kMaxRetryAfterMs;
    }
    int64_t seconds = std::stoll(std::string(value));
    return std::min(seconds * 1000, kMaxRetryAfterMs);
  }
  // An HTTP-date starts with a day name; curl_getdate alone would also take
  // text such as "-1" or "tomorrow".
  if (value.size() < 20 || !std::isalpha(static_cast<unsigned char>(value.front()))) {
    return std::nullopt;
  }
  time_t at = curl_getdate(std::string(value).c_str(), nullptr);
  if (at == -1) {
    return std::nullopt;
  }
  int64_t wait = static_cast<int64_t>(at) * 1000 - now_ms;
  return std::clamp<int64_t>(wait, 0, kMaxRetryAfterMs);
}

}  // namespace dq

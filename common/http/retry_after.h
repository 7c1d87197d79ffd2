// Retry-After (RFC 9110 10.2.3) as dq honours it on a 429 or 503 callback
// answer: delta-seconds or an HTTP-date, turned into a wait in ms.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dq {

// The longest wait dq honours: a longer Retry-After (an absurd one, or a
// date far ahead) is cut to this.
constexpr int64_t kMaxRetryAfterMs = 3600 * 1000;

// The wait `value` asks for, from `now_ms` (wall clock, ms since the epoch):
// delta-seconds ("120") or an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT", and
// the obsolete RFC 850 and asctime forms). A date in the past is 0. At most
// kMaxRetryAfterMs. nullopt when the value is neither (an ordinary failure).
std::optional<int64_t> parse_retry_after(std::string_view value, int64_t now_ms);

// Whether an answer of this status may defer its job by Retry-After.
inline bool defers_by_retry_after(long http_status) {
  return http_status == 429 || http_status == 503;
}

}  // namespace dq

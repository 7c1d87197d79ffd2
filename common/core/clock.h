// Time helpers. All job times are milliseconds since the Unix epoch.
#pragma once

#include <cstdint>
#include <string>

#include "common/core/status.h"

namespace dq {

int64_t now_ms();        // wall clock
int64_t monotonic_ms();  // for timeouts and intervals

constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;

// "YYYY-MM-DD HH:MM:SS" in the server's local time zone -> ms; anything else
// is kInvalid. A strict front of common/core/time_text.h, which parses every time
// form the APIs take.
Result<int64_t> parse_datetime_ms(const std::string& text);

}  // namespace dq

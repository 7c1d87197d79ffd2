// Due times as producers write them, for `at` (HTTP API) and `fix_time`
// (legacy protocol): ONE parser, so both ports mean the same time by the
// same text. The PHP delay queue passed fix_time to strtotime(); these are
// the forms its producers send:
//   "2026-03-01 12:34:56"    Y-m-d H:i:s   (server local time)
//   "2026-03-01 12:34"       Y-m-d H:i     (seconds 0)
//   "2026-03-01"             Y-m-d         (midnight)
//   "2026-03-01T12:34:56+08:00", "...Z", "...+0800"   ISO 8601 (date('c')), its own offset;
//                            a space instead of T and fractional seconds are accepted too
//   1772368496, 1772368496.5, "1772368496"   unix seconds
//   ""                       now
//   "+90 seconds", "+1 minute", "+2 hours", "+3 days"   relative to now
// A date or time that does not exist (2026-02-30, 25:00, 12:60) is refused,
// never moved to another day as mktime() would.
#pragma once

#include <cstdint>
#include <string>

#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

// When a new job is due: `ms` after Redis's now, or at epoch ms `ms`.
struct DueTime {
  bool relative = true;
  int64_t ms = 0;
};

// A time value (JSON number or string) -> a due time: fixed (ms since the
// epoch) or relative to Redis's "now" (the relative forms and ""). kInvalid
// names the accepted forms, or says the date does not exist.
Result<DueTime> parse_time_value(const Json& value);
Result<DueTime> parse_time_text(const std::string& text);

// ms since the epoch -> "Y-m-d H:i:s" in the server's local time zone, as
// PHP's date('Y-m-d H:i:s') wrote it.
std::string format_local_datetime(int64_t ms);

// A length of time for people: "450 ms", "12s", "3m05s", "1h02m", "2d03h";
// "-" when negative (a clock stepped back).
std::string format_duration(int64_t ms);

}  // namespace dq

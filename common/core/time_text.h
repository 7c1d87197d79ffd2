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
// With a time zone (`tz`), the forms without an offset ("2026-03-29 09:00",
// "2026-03-29 09:00:30", "2026-03-29T09:00", "2026-03-29") are wall times in
// that zone, resolved by the rule of common/core/time_zone.h (a repeated
// wall time is its first occurrence; a skipped one moves forward by the
// gap); the forms that name an instant on their own ignore it.
#pragma once

#include <cstdint>
#include <string>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/core/time_zone.h"

namespace dq {

// When a new job is due: `ms` after Redis's now, or at epoch ms `ms`.
struct DueTime {
  bool relative = true;
  int64_t ms = 0;
};

// A time value (JSON number or string) -> a due time: fixed (ms since the
// epoch) or relative to Redis's "now" (the relative forms and ""). kInvalid
// names the accepted forms, or says the date does not exist.
// `zone` (nullptr: the server's local zone) reads the wall-time forms.
Result<DueTime> parse_time_value(const Json& value, const TimeZone* zone = nullptr);
Result<DueTime> parse_time_text(const std::string& text, const TimeZone* zone = nullptr);

// An `at` plus an optional `tz` (an IANA name; "" = the server's local zone),
// as adds, updates and batch adds take them: kInvalid names an unknown zone.
Result<DueTime> resolve_due_time(const Json& at, const std::string& tz);

// ms since the epoch -> "Y-m-d H:i:s" in the server's local time zone, as
// PHP's date('Y-m-d H:i:s') wrote it.
std::string format_local_datetime(int64_t ms);
// ms since the epoch -> "2026-03-30T00:00:00Z" (UTC, whole seconds): a
// schedule's tick as its job id and listings name it.
std::string format_utc_instant(int64_t ms);

// A length of time for people: "450 ms", "12s", "3m05s", "1h02m", "2d03h";
// "-" when negative (a clock stepped back).
std::string format_duration(int64_t ms);

// Epoch ms -> "2026-03-29T01:30:00Z" (UTC, whole seconds).
std::string utc_text(int64_t ms);

}  // namespace dq

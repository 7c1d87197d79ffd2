// Named IANA time zones ("Europe/Paris") from the system's tz database
// (/usr/share/zoneinfo, Debian's tzdata), read through Howard Hinnant's date
// library (Debian's libhowardhinnant-date-dev, built with USE_OS_TZDB), plus
// each file's closing rule for the years after its last listed change
// (common/core/posix_tz_rule.h).
//
// The one rule for a wall time (docs/decisions.md, "Time zones, schedules,
// quiet hours and lateness"): a wall time that happens twice (the clock goes
// back) is its FIRST occurrence; one that never happens (the clock jumps
// forward) is read with the offset in force before the jump, so it lands
// as far past the jump as it was past its start ("02:30" in a one-hour
// spring-forward gap that starts at 02:00 is 03:30 of the new offset).
// It is Python's zoneinfo with fold=0, RFC 5545's rule and JavaScript
// Temporal's "compatible".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/core/civil_time.h"
#include "common/core/posix_tz_rule.h"
#include "common/core/status.h"

namespace dq {

// The instants at which a zone's clock shows one wall time.
struct WallTimeInstants {
  int count = 1;        // 1; 2 when the clock went back over it; 0 when it jumped over it
  int64_t first = 0;    // epoch s: the first instant, or (count 0) the one the rule gives
  int64_t second = 0;   // count 2: the second instant
  int64_t gap_end = 0;  // count 0: the instant the jump happened (the first after the gap)
};

class TimeZone {
 public:
  // kInvalid naming the zone when it is not in the tz database.
  static Result<TimeZone> find(const std::string& name);

  const std::string& name() const;

  // The offset in force at an instant, and from when to when.
  UtcOffsetPeriod period_at(int64_t epoch_s) const;
  // What the zone's clock shows at an instant (wall seconds, civil_time.h).
  int64_t wall_seconds_at(int64_t epoch_s) const;
  // When the zone's clock shows a wall time.
  WallTimeInstants instants_at(int64_t wall_s) const;
  // The instant a wall time means, by the rule above (epoch s).
  int64_t resolve(int64_t wall_s) const { return instants_at(wall_s).first; }

 private:
  struct Data;
  explicit TimeZone(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

}  // namespace dq

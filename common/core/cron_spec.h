// When a schedule ticks: a five-field cron spec read in a time zone, a
// fixed interval, or a shorthand.
//   "*/15 9-17 * * MON-FRI"   minute hour day-of-month month day-of-week:
//       lists (1,15), ranges (9-17), steps (*/15, 0-30/10, 5/20 = 5-59/20),
//       names (JAN..DEC, SUN..SAT; 0 and 7 are both Sunday), case-insensitive;
//       day-of-month and day-of-week both restricted (neither starts with
//       '*'): either one matching is enough (Vixie cron's rule); otherwise
//       both must match.
//   "@hourly" "@daily" (= "@midnight") "@weekly" "@monthly" "@yearly" (= "@annually")
//   "@every 10s", "@every 5m", "@every 1h30m": every so long, on multiples
//       of it counted from the Unix epoch, so every host computes the same
//       ticks without talking (the time zone does not matter).
// A tick is an instant. A tick's wall time that happens twice (the clock
// goes back) ticks once, at its first occurrence; one that never happens
// (the clock jumps forward) ticks at the instant common/core/time_zone.h's
// rule gives it (as far past the jump as it was past the gap's start).
// Ticks that land on the same instant are one tick. docs/decisions.md, "Time
// zones, schedules, quiet hours and lateness", says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/core/time_zone.h"

namespace dq {

class CronSpec {
 public:
  // kInvalid saying which field is wrong and why, or that the spec never
  // matches a date (e.g. "0 0 30 2 *").
  static Result<CronSpec> parse(const std::string& text, const TimeZone& zone);

  const std::string& text() const { return text_; }
  const TimeZone& zone() const { return zone_; }
  // For "@every": the interval in ms; 0 for a calendar spec.
  int64_t interval_ms() const { return interval_ms_; }

  // The first tick strictly after `after_ms` (epoch ms; nullopt only for a
  // spec whose next match is over a century away), and the next `count`.
  std::optional<int64_t> next_after(int64_t after_ms) const;
  std::vector<int64_t> next_runs(int64_t after_ms, size_t count) const;

 private:
  explicit CronSpec(TimeZone zone) : zone_(std::move(zone)) {}
  bool day_matches(int64_t days) const;
  // The first wall minute at or after `wall_s` that matches the fields;
  // nullopt when none does within a century.
  std::optional<int64_t> next_matching_wall_minute(int64_t wall_s) const;

  std::string text_;
  TimeZone zone_;
  int64_t interval_ms_ = 0;
  // One bit per allowed value.
  uint64_t minutes_ = 0;            // 0..59
  uint64_t hours_ = 0;              // 0..23
  uint64_t days_of_month_ = 0;      // 1..31
  uint64_t months_ = 0;             // 1..12
  uint64_t days_of_week_ = 0;       // 0..6, 0 = Sunday
  bool day_of_month_star_ = false;  // the field starts with '*'
  bool day_of_week_star_ = false;
};

}  // namespace dq

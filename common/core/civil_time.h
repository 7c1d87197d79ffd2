// The proleptic Gregorian calendar without time zones: what a clock on the
// wall shows, as fields or as "wall seconds" (seconds since 1970-01-01
// 00:00:00 on that wall, counted as if every day had 86400 seconds). Time
// zones (common/core/time_zone.h) map wall seconds to instants and back; the
// schedules and windows do their calendar arithmetic here, on wall seconds.
#pragma once

#include <cstdint>

namespace dq {

struct CivilTime {
  int year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  int hour = 0;
  int minute = 0;
  int second = 0;
};

bool leap_year(int year);
int days_in_month(int year, int month);  // month 1..12

// Days from 1970-01-01 to year-month-day, and back (any int64 day count).
int64_t days_from_civil(int64_t year, int month, int day);
CivilTime civil_from_days(int64_t days);

// 0 = Sunday .. 6 = Saturday, as cron counts them.
int weekday_from_days(int64_t days);

int64_t wall_seconds(const CivilTime& civil);
CivilTime civil_from_wall_seconds(int64_t wall_seconds);

// Floor division for times before 1970 (-1 s is day -1, not day 0).
inline int64_t floor_div(int64_t value, int64_t divisor) {
  return value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor);
}

}  // namespace dq

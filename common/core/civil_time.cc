// Implements common/core/civil_time.h with Howard Hinnant's public-domain
// day-count algorithms (http://howardhinnant.github.io/date_algorithms.html).
#include "common/core/civil_time.h"

namespace dq {

bool leap_year(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in_month(int year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && leap_year(year) ? 29 : kDays[month - 1];
}

int64_t days_from_civil(int64_t year, int month, int day) {
  year -= month <= 2;
  int64_t era = (year >= 0 ? year : year - 399) / 400;
  int64_t year_of_era = year - era * 400;
  int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

CivilTime civil_from_days(int64_t days) {
  days += 719468;
  int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  int64_t day_of_era = days - era * 146097;
  int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  int64_t shifted_month = (5 * day_of_year + 2) / 153;  // March = 0
  CivilTime civil;
  civil.day = static_cast<int>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
  civil.month = static_cast<int>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
  civil.year = static_cast<int>(year_of_era + era * 400 + (civil.month <= 2));
  return civil;
}

int weekday_from_days(int64_t days) {
  // 1970-01-01 was a Thursday (4).
  return static_cast<int>((days % 7 + 7 + 4) % 7);
}

int64_t wall_seconds(const CivilTime& civil) {
  return days_from_civil(civil.year, civil.month, civil.day) * 86400 + int64_t{civil.hour} * 3600 +
         int64_t{civil.minute} * 60 + civil.second;
}

CivilTime civil_from_wall_seconds(int64_t wall) {
  int64_t days = floor_div(wall, 86400);
  int64_t second_of_day = wall - days * 86400;
  CivilTime civil = civil_from_days(days);
  civil.hour = static_cast<int>(second_of_day / 3600);
  civil.minute = static_cast<int>(second_of_day / 60 % 60);
  civil.second = static_cast<int>(second_of_day % 60);
  return civil;
}

}  // namespace dq

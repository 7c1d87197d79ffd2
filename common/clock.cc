#include "common/clock.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace dq {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t monotonic_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

Result<int64_t> parse_datetime_ms(const std::string& text) {
  struct tm parts {};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int used = 0;
  if (text.size() != 19 ||
      std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &used) != 6 ||
      used != 19) {
    return Status(Code::kInvalid, "time '" + text + "' is not YYYY-MM-DD HH:MM:SS");
  }
  parts.tm_year = year - 1900;
  parts.tm_mon = month - 1;
  parts.tm_mday = day;
  parts.tm_hour = hour;
  parts.tm_min = minute;
  parts.tm_sec = second;
  parts.tm_isdst = -1;
  struct tm normalized = parts;
  time_t seconds = mktime(&normalized);
  // mktime normalizes 2026-02-30 to March 2nd: a changed field means the date did not exist.
  if (seconds == -1 || normalized.tm_mday != day || normalized.tm_mon != month - 1 ||
      normalized.tm_year != year - 1900 || hour > 23 || minute > 59 || second > 59) {
    return Status(Code::kInvalid, "time '" + text + "' is not a valid date and time");
  }
  return static_cast<int64_t>(seconds) * 1000;
}

}  // namespace dq

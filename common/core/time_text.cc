// Implements common/core/time_text.h with a small hand-written scanner: sscanf
// and strptime accept too much (signs, missing digits, trailing text).
#include "common/core/time_text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/core/civil_time.h"

namespace dq {
namespace {

constexpr const char* kForms =
    "use Y-m-d H:i:s, Y-m-d H:i, Y-m-d, ISO 8601 (2026-03-01T12:00:00+08:00), unix seconds, "
    "\"\" (now) or +N seconds|minutes|hours|days";

Status not_a_time(const std::string& text) {
  return Status(Code::kInvalid, "time '" + text + "' is not understood: " + kForms);
}

// Reads exactly `count` digits at text[*at].
bool digits(const std::string& text, size_t* at, size_t count, int* out) {
  if (*at + count > text.size()) {
    return false;
  }
  int value = 0;
  for (size_t i = 0; i < count; ++i) {
    char c = text[*at + i];
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + (c - '0');
  }
  *at += count;
  *out = value;
  return true;
}

bool take(const std::string& text, size_t* at, char c) {
  if (*at < text.size() && text[*at] == c) {
    ++*at;
    return true;
  }
  return false;
}

// "+N unit": N whole, unit seconds|minutes|hours|days (singular too).
Result<DueTime> parse_relative(const std::string& text) {
  size_t at = 1;  // after '+'
  while (at < text.size() && text[at] == ' ') {
    ++at;
  }
  size_t start = at;
  int64_t count = 0;
  while (at < text.size() && isdigit(static_cast<unsigned char>(text[at])) && at - start < 10) {
    count = count * 10 + (text[at] - '0');
    ++at;
  }
  if (at == start) {
    return not_a_time(text);
  }
  while (at < text.size() && text[at] == ' ') {
    ++at;
  }
  std::string unit = text.substr(at);
  for (char& c : unit) {
    c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  }
  if (!unit.empty() && unit.back() == 's') {
    unit.pop_back();
  }
  int64_t unit_s = 0;
  if (unit == "second" || unit == "sec") {
    unit_s = 1;
  }
  if (unit == "minute" || unit == "min") {
    unit_s = 60;
  }
  if (unit == "hour") {
    unit_s = 3600;
  }
  if (unit == "day") {
    unit_s = 86400;
  }
  if (unit_s == 0) {
    return not_a_time(text);
  }
  return DueTime{true, count * unit_s * 1000};
}

// The latest unix second a time may name: 9999-12-31 23:59:59 UTC. Beyond it
// seconds * 1000 no longer fits the int64 milliseconds every due time is
// kept in (found by fuzz_time_text: "63512163512160600534" overflowed).
constexpr double kLastUnixSecond = 253402300799.0;

// Whole unix seconds (a fraction allowed) -> a fixed due time; kInvalid
// outside 0 .. kLastUnixSecond.
// shown() names the value as written; called only for a refusal (an add
// with a numeric `at` would otherwise format it for nothing).
template <typename Shown>
Result<DueTime> fixed_unix_seconds(double seconds, Shown shown) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kLastUnixSecond) {
    return Status(Code::kInvalid, "time " + shown() + " is not unix seconds between 0 and " +
                                      "253402300799 (year 9999): " + kForms);
  }
  return DueTime{false, static_cast<int64_t>(std::llround(seconds * 1000))};
}

// Unix seconds written as digits (optionally with a fraction).
Result<DueTime> parse_unix_text(const std::string& text) {
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(seconds)) {
    return not_a_time(text);
  }
  return fixed_unix_seconds(seconds, [&text] { return "'" + text + "'"; });
}

// Y-m-d, then optionally [T ]H:i[:s[.fraction]], then optionally Z or ±HH[:]MM.
// Without an offset it is a wall time in `zone`, or (nullptr) the server's.
Result<DueTime> parse_calendar(const std::string& text, const TimeZone* zone) {
  size_t at = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, &at, 4, &year) || !take(text, &at, '-') || !digits(text, &at, 2, &month) ||
      !take(text, &at, '-') || !digits(text, &at, 2, &day)) {
    return not_a_time(text);
  }
  int64_t fraction_ms = 0;
  if (at < text.size()) {
    if (!take(text, &at, ' ') && !take(text, &at, 'T')) {
      return not_a_time(text);
    }
    if (!digits(text, &at, 2, &hour) || !take(text, &at, ':') || !digits(text, &at, 2, &minute)) {
      return not_a_time(text);
    }
    if (take(text, &at, ':')) {
      if (!digits(text, &at, 2, &second)) {
        return not_a_time(text);
      }
      if (take(text, &at, '.')) {
        size_t start = at;
        int64_t scale = 100;
        while (at < text.size() && isdigit(static_cast<unsigned char>(text[at]))) {
          fraction_ms += (text[at] - '0') * scale;
          scale /= 10;
          ++at;
        }
        if (at == start) {
          return not_a_time(text);
        }
      }
    }
  }
  bool has_offset = false;
  int offset_s = 0;
  if (at < text.size()) {
    has_offset = true;
    if (take(text, &at, 'Z')) {
      offset_s = 0;
    } else {
      char sign = text[at];
      if (sign != '+' && sign != '-') {
        return not_a_time(text);
      }
      ++at;
      int offset_h = 0, offset_m = 0;
      if (!digits(text, &at, 2, &offset_h)) {
        return not_a_time(text);
      }
      take(text, &at, ':');
      if (!digits(text, &at, 2, &offset_m)) {
        return not_a_time(text);
      }
      if (offset_h > 14 || offset_m > 59) {
        return Status(Code::kInvalid, "time '" + text + "' does not have a valid UTC offset");
      }
      offset_s = (offset_h * 3600 + offset_m * 60) * (sign == '-' ? -1 : 1);
    }
    if (at != text.size()) {
      return not_a_time(text);
    }
  }
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
      minute > 59 || second > 59) {
    return Status(Code::kInvalid, "time '" + text + "' is not a valid date and time");
  }
  int64_t seconds = 0;
  int64_t wall = wall_seconds(CivilTime{year, month, day, hour, minute, second});
  if (has_offset) {
    seconds = wall - offset_s;
  } else if (zone != nullptr) {
    seconds = zone->resolve(wall);
  } else {
    struct tm parts {};
    parts.tm_year = year - 1900;
    parts.tm_mon = month - 1;
    parts.tm_mday = day;
    parts.tm_hour = hour;
    parts.tm_min = minute;
    parts.tm_sec = second;
    parts.tm_isdst = -1;
    time_t local = mktime(&parts);
    if (local == -1) {
      return Status(Code::kInvalid, "time '" + text + "' is out of range");
    }
    seconds = local;
  }
  return DueTime{false, seconds * 1000 + fraction_ms};
}

}  // namespace

Result<DueTime> parse_time_text(const std::string& raw, const TimeZone* zone) {
  size_t first = raw.find_first_not_of(' ');
  size_t last = raw.find_last_not_of(' ');
  if (first == std::string::npos) {
    return DueTime{true, 0};  // "" means now
  }
  std::string text = raw.substr(first, last - first + 1);
  if (text[0] == '+') {
    return parse_relative(text);
  }
  bool all_digits = true;
  size_t dots = 0;
  for (char c : text) {
    if (c == '.') {
      ++dots;
    } else if (!isdigit(static_cast<unsigned char>(c))) {
      all_digits = false;
    }
  }
  if (all_digits && dots <= 1) {
    return parse_unix_text(text);
  }
  return parse_calendar(text, zone);
}

Result<DueTime> parse_time_value(const Json& value, const TimeZone* zone) {
  if (value.is_number()) {
    return fixed_unix_seconds(value.get<double>(), [&value] { return value.dump(); });
  }
  if (value.is_string()) {
    return parse_time_text(value.get<std::string>(), zone);
  }
  return Status(Code::kInvalid, "time " + value.dump() + " is not understood: " + kForms);
}

Result<DueTime> resolve_due_time(const Json& at, const std::string& tz) {
  if (tz.empty()) {
    return parse_time_value(at);
  }
  auto zone = TimeZone::find(tz);
  if (!zone.is_ok()) {
    return zone.status();
  }
  return parse_time_value(at, &*zone);
}

std::string utc_text(int64_t ms) {
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm parts {};
  gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

std::string format_duration(int64_t ms) {
  if (ms < 0) {
    return "-";
  }
  if (ms < 1000) {
    return std::to_string(ms) + " ms";
  }
  long long s = ms / 1000;
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof(text), "%llds", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", s / 60, s % 60);
  } else if (s < 86400) {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", s / 3600, s / 60 % 60);
  } else {
    std::snprintf(text, sizeof(text), "%lldd%02lldh", s / 86400, s / 3600 % 24);
  }
  return text;
}

// ms since the epoch in strftime's `format`, on the server's clock or UTC's.
std::string format_epoch_ms(int64_t ms, const char* format, bool utc) {
  time_t seconds = static_cast<time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  struct tm fields {};
  utc ? gmtime_r(&seconds, &fields) : localtime_r(&seconds, &fields);
  char text[32];
  strftime(text, sizeof(text), format, &fields);
  return text;
}

std::string format_local_datetime(int64_t ms) {
  return format_epoch_ms(ms, "%Y-%m-%d %H:%M:%S", false);
}

std::string format_utc_instant(int64_t ms) {
  return format_epoch_ms(ms, "%Y-%m-%dT%H:%M:%SZ", true);
}

}  // namespace dq

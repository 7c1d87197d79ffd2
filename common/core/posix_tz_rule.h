// The rule a TZif file ends with (its "footer", a POSIX TZ string such as
// "CET-1CEST,M3.5.0,M10.5.0/3"): the offsets in force after the last
// transition the file lists. Debian's files list transitions up to 2037; the
// date library's reader (USE_OS_TZDB) ignores the footer, so without this a
// summer time after 2037 would read as winter time (HowardHinnant/date#794).
// Grammar: tzfile(5) and POSIX, with the version 3 extensions (rule times
// from -167 to 167 hours).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dq {

// A stretch of time with one offset from UTC: epoch seconds [begin, end),
// local = UTC + offset_s.
struct UtcOffsetPeriod {
  int64_t begin = 0;
  int64_t end = 0;
  int32_t offset_s = 0;
};

class PosixTzRule {
 public:
  // nullopt when the text is not a TZ string this reader understands (the
  // caller then has no rule past the listed transitions).
  static std::optional<PosixTzRule> parse(const std::string& text);

  bool has_daylight_saving() const { return has_dst_; }
  // The period the rule puts `epoch_s` in (for a rule without daylight
  // saving: one endless period).
  UtcOffsetPeriod period_at(int64_t epoch_s) const;

 private:
  // When a change happens: a day of the year and a time of that day, in the
  // local time in force before the change.
  struct ChangeDay {
    char form = 'M';  // 'M' month.week.weekday, 'J' 1..365 without Feb 29, 'n' 0..365
    int month = 0;
    int week = 0;
    int weekday = 0;
    int day = 0;
    int32_t time_s = 7200;
  };
  int64_t change_instant(int year, const ChangeDay& day, int32_t offset_before) const;

  int32_t std_offset_s_ = 0;
  int32_t dst_offset_s_ = 0;
  bool has_dst_ = false;
  ChangeDay dst_starts_;
  ChangeDay dst_ends_;
};

}  // namespace dq

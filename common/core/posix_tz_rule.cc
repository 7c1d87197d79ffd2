// Implements common/core/posix_tz_rule.h: a small scanner for the TZ string
// and the day-of-year arithmetic of its change rules.
#include "common/core/posix_tz_rule.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <vector>

#include "common/core/civil_time.h"

namespace dq {
namespace {

struct TzStringScanner {
  const std::string& text;
  size_t at = 0;

  bool done() const { return at == text.size(); }
  char peek() const { return done() ? '\0' : text[at]; }
  bool take(char c) {
    if (peek() != c) {
      return false;
    }
    ++at;
    return true;
  }
  // Up to `most` decimal digits (at least one).
  bool number(int most, int* out) {
    size_t start = at;
    int value = 0;
    while (!done() && isdigit(static_cast<unsigned char>(peek())) && at - start < size_t(most)) {
      value = value * 10 + (text[at++] - '0');
    }
    *out = value;
    return at > start;
  }
};

// "CET", or "<+0330>" (quoted: digits and signs allowed).
bool zone_abbreviation(TzStringScanner* in) {
  if (in->take('<')) {
    size_t start = in->at;
    while (!in->done() && in->peek() != '>') {
      ++in->at;
    }
    return in->at > start && in->take('>');
  }
  size_t start = in->at;
  while (!in->done() && isalpha(static_cast<unsigned char>(in->peek()))) {
    ++in->at;
  }
  return in->at - start >= 3;
}

// [+-]hh[:mm[:ss]], hours up to `max_hours`; seconds, sign applied.
bool signed_hms(TzStringScanner* in, int max_hours, int32_t* out) {
  int sign = 1;
  if (in->take('-')) {
    sign = -1;
  } else {
    in->take('+');
  }
  int hours = 0, minutes = 0, seconds = 0;
  if (!in->number(3, &hours) || hours > max_hours) {
    return false;
  }
  if (in->take(':') && (!in->number(2, &minutes) || minutes > 59)) {
    return false;
  }
  if (in->take(':') && (!in->number(2, &seconds) || seconds > 59)) {
    return false;
  }
  *out = sign * (hours * 3600 + minutes * 60 + seconds);
  return true;
}

}  // namespace

std::optional<PosixTzRule> PosixTzRule::parse(const std::string& text) {
  TzStringScanner in{text};
  PosixTzRule rule;
  int32_t west = 0;  // POSIX offsets count hours west of Greenwich
  if (!zone_abbreviation(&in) || !signed_hms(&in, 24, &west)) {
    return std::nullopt;
  }
  rule.std_offset_s_ = -west;
  if (in.done()) {
    return rule;
  }
  if (!zone_abbreviation(&in)) {
    return std::nullopt;
  }
  rule.has_dst_ = true;
  rule.dst_offset_s_ = rule.std_offset_s_ + 3600;
  if (in.peek() != ',' && !in.done()) {
    if (!signed_hms(&in, 24, &west)) {
      return std::nullopt;
    }
    rule.dst_offset_s_ = -west;
  }
  // Without a rule POSIX leaves the change days to the implementation; zic
  // always writes one, so such a text is not one this reader takes.
  for (ChangeDay* day : {&rule.dst_starts_, &rule.dst_ends_}) {
    if (!in.take(',')) {
      return std::nullopt;
    }
    if (in.take('M')) {
      day->form = 'M';
      if (!in.number(2, &day->month) || !in.take('.') || !in.number(1, &day->week) ||
          !in.take('.') || !in.number(1, &day->weekday) || day->month < 1 || day->month > 12 ||
          day->week < 1 || day->week > 5 || day->weekday > 6) {
        return std::nullopt;
      }
    } else if (in.take('J')) {
      day->form = 'J';
      if (!in.number(3, &day->day) || day->day < 1 || day->day > 365) {
        return std::nullopt;
      }
    } else {
      day->form = 'n';
      if (!in.number(3, &day->day) || day->day > 365) {
        return std::nullopt;
      }
    }
    if (in.take('/') && !signed_hms(&in, 167, &day->time_s)) {
      return std::nullopt;
    }
  }
  if (!in.done()) {
    return std::nullopt;
  }
  return rule;
}

int64_t PosixTzRule::change_instant(int year, const ChangeDay& day, int32_t offset_before) const {
  int64_t days = 0;
  if (day.form == 'M') {
    int64_t first = days_from_civil(year, day.month, 1);
    int64_t to_weekday = (day.weekday - weekday_from_days(first) + 7) % 7;
    days = first + to_weekday + int64_t{day.week - 1} * 7;
    if (day.week == 5 && days >= first + days_in_month(year, day.month)) {
      days -= 7;  // "week 5" is the last such weekday of the month
    }
  } else {
    days = days_from_civil(year, 1, 1) + day.day;
    if (day.form == 'J') {
      days -= 1;  // J1 is January 1st, and J60 is March 1st even in a leap year
      if (leap_year(year) && day.day >= 60) {
        days += 1;
      }
    }
  }
  return days * 86400 + day.time_s - offset_before;
}

UtcOffsetPeriod PosixTzRule::period_at(int64_t epoch_s) const {
  constexpr int64_t kForever = std::numeric_limits<int64_t>::max() / 4;
  if (!has_dst_) {
    return {-kForever, kForever, std_offset_s_};
  }
  // The changes of the year around epoch_s and of the years on each side,
  // in time order: (instant, offset from then on). A start pushed after an
  // end at the same instant wins it (a zone in daylight saving all year).
  int year = civil_from_days(floor_div(epoch_s, 86400)).year;
  std::vector<std::pair<int64_t, int32_t>> changes;
  for (int y = year - 1; y <= year + 1; ++y) {
    changes.emplace_back(change_instant(y, dst_starts_, std_offset_s_), dst_offset_s_);
    changes.emplace_back(change_instant(y, dst_ends_, dst_offset_s_), std_offset_s_);
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  UtcOffsetPeriod period{-kForever, kForever, std_offset_s_};
  for (const auto& [instant, offset] : changes) {
    if (instant <= epoch_s) {
      period.begin = instant;
      period.offset_s = offset;
    } else {
      period.end = instant;
      break;
    }
  }
  return period;
}

}  // namespace dq

// Implements common/core/delivery_window.h. Openness is a test of the wall
// clock; the next opening is the first instant, among those at which the
// window can open (a range's start, a jump of the clock), that is open.
#include "common/core/delivery_window.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/core/civil_time.h"

namespace dq {
namespace {

constexpr const char* kWindowForm =
    "write [days] HH:MM-HH:MM[,HH:MM-HH:MM] ... [zone], e.g. \"Mon-Fri 09:00-18:00 "
    "Asia/Shanghai\"";

// How far ahead an opening is looked for.
constexpr int64_t kLookAheadS = int64_t{15} * 86400;

const char* const kWeekdayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
const char* const kFullWeekdayNames[] = {"sunday",   "monday", "tuesday", "wednesday",
                                         "thursday", "friday", "saturday"};

std::optional<int> day_number(std::string word) {
  for (char& c : word) {
    c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  }
  for (int day = 0; day < 7; ++day) {
    if (word == kWeekdayNames[day] || word == kFullWeekdayNames[day]) {
      return day;
    }
  }
  return std::nullopt;
}

std::vector<std::string> split_on(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) {
    parts.push_back(part);
  }
  if (!text.empty() && text.back() == separator) {
    parts.emplace_back();
  }
  return parts;
}

// "Mon", "Mon-Fri", "Fri-Mon", "Mon,Wed,Fri-Sun" -> bit per day; nullopt
// when a part is not a day.
std::optional<uint8_t> parse_days(const std::string& word) {
  uint8_t days = 0;
  for (const std::string& part : split_on(word, ',')) {
    size_t dash = part.find('-');
    auto first = day_number(part.substr(0, dash));
    auto last = dash == std::string::npos ? first : day_number(part.substr(dash + 1));
    if (!first || !last) {
      return std::nullopt;
    }
    for (int day = *first;; day = (day + 1) % 7) {  // wraps over the week's end
      days = static_cast<uint8_t>(days | (1u << day));
      if (day == *last) {
        break;
      }
    }
  }
  return days;
}

// "HH:MM" -> seconds into the day (24:00 is 86400); -1 when not one.
int clock_seconds(const std::string& text) {
  if (text.size() != 5 || text[2] != ':' || !isdigit(static_cast<unsigned char>(text[0])) ||
      !isdigit(static_cast<unsigned char>(text[1])) ||
      !isdigit(static_cast<unsigned char>(text[3])) ||
      !isdigit(static_cast<unsigned char>(text[4]))) {
    return -1;
  }
  int hour = (text[0] - '0') * 10 + (text[1] - '0');
  int minute = (text[3] - '0') * 10 + (text[4] - '0');
  if (minute > 59 || hour > 24 || (hour == 24 && minute != 0)) {
    return -1;
  }
  return hour * 3600 + minute * 60;
}

}  // namespace

Result<DeliveryWindow> DeliveryWindow::parse(const std::string& raw, const TimeZone& zone) {
  std::string spaced = raw;
  std::replace(spaced.begin(), spaced.end(), ';', ' ');
  std::istringstream in(spaced);
  std::vector<std::string> words;
  for (std::string word; in >> word;) {
    words.push_back(word);
  }
  DeliveryWindow window(zone);
  for (size_t i = 0; i < words.size(); ++i) {
    window.text_ += (i ? " " : "") + words[i];
  }
  auto refuse = [&](const std::string& why) {
    return Status(Code::kInvalid, "delivery window '" + window.text_ + "': " + why);
  };
  if (words.empty()) {
    return refuse(std::string("is empty: ") + kWindowForm);
  }
  std::string days_without_hours;  // the last days word, until hours follow it
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (isdigit(static_cast<unsigned char>(word[0]))) {
      if (window.groups_.empty()) {
        window.groups_.push_back(Group{0x7f, {}});  // no days: every day
      }
      for (const std::string& range : split_on(word, ',')) {
        size_t dash = range.find('-');
        int start = clock_seconds(range.substr(0, dash));
        int end = dash == std::string::npos ? -1 : clock_seconds(range.substr(dash + 1));
        if (start < 0 || end < 0 || start == 86400) {
          return refuse("'" + range + "' is not a range of hours HH:MM-HH:MM (00:00 to 24:00)");
        }
        if (start == end) {
          return refuse("'" + range + "' is empty: use 00:00-24:00 for a whole day");
        }
        window.groups_.back().hours.push_back(Hours{start, end});
      }
      days_without_hours.clear();
      continue;
    }
    if (auto days = parse_days(word)) {
      if (!days_without_hours.empty()) {
        return refuse("days '" + days_without_hours + "' have no hours");
      }
      window.groups_.push_back(Group{*days, {}});
      days_without_hours = word;
      continue;
    }
    if (i + 1 < words.size()) {
      return refuse("'" + word +
                    "' is not days (Mon..Sun, Mon-Fri, Sat,Sun) or hours: " + kWindowForm);
    }
    auto named = TimeZone::find(word);
    if (!named.is_ok()) {
      return refuse("'" + word +
                    "' is not days, hours or a time zone: " + named.status().message());
    }
    window.zone_ = *named;
  }
  if (!days_without_hours.empty()) {
    return refuse("days '" + days_without_hours + "' have no hours");
  }
  if (window.groups_.empty()) {
    return refuse(std::string("has no hours: ") + kWindowForm);
  }
  return window;
}

bool DeliveryWindow::is_open_at_wall(int64_t wall_s) const {
  int64_t days = floor_div(wall_s, 86400);
  int second_of_day = static_cast<int>(wall_s - days * 86400);
  int today = weekday_from_days(days);
  int yesterday = (today + 6) % 7;
  for (const Group& group : groups_) {
    bool on_today = (group.days >> today) & 1;
    bool on_yesterday = (group.days >> yesterday) & 1;
    for (const Hours& hours : group.hours) {
      if (hours.start_s < hours.end_s) {
        if (on_today && second_of_day >= hours.start_s && second_of_day < hours.end_s) {
          return true;
        }
      } else if ((on_today && second_of_day >= hours.start_s) ||
                 (on_yesterday && second_of_day < hours.end_s)) {
        return true;  // across midnight: tonight's, or the tail of last night's
      }
    }
  }
  return false;
}

bool DeliveryWindow::is_open_at(int64_t epoch_ms) const {
  return is_open_at_wall(zone_.wall_seconds_at(floor_div(epoch_ms, 1000)));
}

std::optional<int64_t> DeliveryWindow::next_open(int64_t epoch_ms) const {
  if (is_open_at(epoch_ms)) {
    return epoch_ms;
  }
  // Openness changes only where the wall clock reaches a range's start (at
  // each of its occurrences) or jumps (a change of offset).
  int64_t from_s = floor_div(epoch_ms, 1000);
  std::vector<int64_t> candidates;
  for (UtcOffsetPeriod period = zone_.period_at(from_s); period.end <= from_s + kLookAheadS;
       period = zone_.period_at(period.end)) {
    candidates.push_back(period.end);
  }
  int64_t first_day = floor_div(zone_.wall_seconds_at(from_s), 86400) - 1;
  for (int64_t day = first_day; day <= first_day + kLookAheadS / 86400 + 1; ++day) {
    int weekday = weekday_from_days(day);
    for (const Group& group : groups_) {
      if (!((group.days >> weekday) & 1)) {
        continue;
      }
      for (const Hours& hours : group.hours) {
        WallTimeInstants at = zone_.instants_at(day * 86400 + hours.start_s);
        if (at.count >= 1) {
          candidates.push_back(at.first);
        }
        if (at.count == 2) {
          candidates.push_back(at.second);
        }
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (int64_t candidate : candidates) {
    if (candidate * 1000 > epoch_ms && is_open_at_wall(zone_.wall_seconds_at(candidate))) {
      return candidate * 1000;
    }
  }
  return std::nullopt;
}

}  // namespace dq

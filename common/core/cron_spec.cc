// Implements common/core/cron_spec.h: a field parser into bit masks, a
// search for the next matching wall minute, and the time zone's rule to
// turn that wall minute into an instant.
#include "common/core/cron_spec.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/core/civil_time.h"

namespace dq {
namespace {

// A matching day is looked for this far ahead: the rarest spec that can
// match at all (Feb 29 on one weekday) waits up to 40 years between runs.
constexpr int64_t kSearchDays = int64_t{100} * 366;

// The longest "@every": a year.
constexpr int64_t kLongestIntervalS = int64_t{366} * 86400;

constexpr const char* kScheduleForms =
    "five fields (minute hour day-of-month month day-of-week, e.g. \"*/15 9-17 * * MON-FRI\"), "
    "@hourly, @daily, @weekly, @monthly, @yearly or @every <N>s|m|h";

struct CronField {
  const char* name;
  int min;
  int max;
  const char* const* names;  // names[i] means min + i; nullptr when none
};

const char* const kCronMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",  "jul",
                                       "aug", "sep", "oct", "nov", "dec", nullptr};
const char* const kCronDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr};

const CronField kCronFields[] = {
    {"minute", 0, 59, nullptr},           {"hour", 0, 23, nullptr},
    {"day-of-month", 1, 31, nullptr},     {"month", 1, 12, kCronMonthNames},
    {"day-of-week", 0, 7, kCronDayNames},  // 7 is Sunday too
};

std::string ascii_lower(std::string text) {
  for (char& c : text) {
    c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  }
  return text;
}

Status bad_field(const CronField& field, const std::string& text, const std::string& why) {
  return Status(Code::kInvalid, std::string("cron ") + field.name + " '" + text + "' " + why);
}

// A number or (for months and weekdays) a three-letter name.
Result<int> field_value(const CronField& field, const std::string& item, const std::string& text) {
  if (!text.empty() && isdigit(static_cast<unsigned char>(text[0]))) {
    if (text.size() > 2 || !std::all_of(text.begin(), text.end(), [](char c) {
          return isdigit(static_cast<unsigned char>(c));
        })) {
      return bad_field(field, item, "is not a number");
    }
    int value = std::stoi(text);
    if (value < field.min || value > field.max) {
      return bad_field(field, item,
                       "is outside " + std::to_string(field.min) + "-" + std::to_string(field.max));
    }
    return value;
  }
  for (int i = 0; field.names && field.names[i]; ++i) {
    if (ascii_lower(text) == field.names[i]) {
      return field.min + i;
    }
  }
  return bad_field(
      field, item,
      field.names ? "is not a number or a name (JAN..DEC, SUN..SAT)" : "is not a number");
}

// "*", "5", "1-5", "*/15", "1-30/5", "5/20" and lists of them -> one bit per value.
Result<uint64_t> parse_field(const CronField& field, const std::string& text) {
  uint64_t mask = 0;
  std::stringstream items(text);
  std::string item;
  size_t commas = std::count(text.begin(), text.end(), ',');
  size_t seen = 0;
  while (std::getline(items, item, ',')) {
    ++seen;
    if (item.empty()) {
      return bad_field(field, text, "has an empty list item");
    }
    std::string range = item;
    int step = 1;
    size_t slash = item.find('/');
    if (slash != std::string::npos) {
      range = item.substr(0, slash);
      std::string step_text = item.substr(slash + 1);
      if (step_text.empty() || step_text.size() > 2 ||
          !std::all_of(step_text.begin(), step_text.end(),
                       [](char c) { return isdigit(static_cast<unsigned char>(c)); }) ||
          std::stoi(step_text) == 0) {
        return bad_field(field, item, "needs a step from 1 to 99 after '/'");
      }
      step = std::stoi(step_text);
    }
    int first = field.min;
    int last = field.max;
    if (range != "*") {
      size_t dash = range.find('-');
      auto low = field_value(field, item, range.substr(0, dash));
      if (!low.is_ok()) {
        return low.status();
      }
      first = *low;
      last = slash != std::string::npos ? field.max : first;  // "5/20" is 5-max/20
      if (dash != std::string::npos) {
        auto high = field_value(field, item, range.substr(dash + 1));
        if (!high.is_ok()) {
          return high.status();
        }
        last = *high;
        if (last < first) {
          return bad_field(field, item, "is a range that runs backwards");
        }
      }
    }
    for (int value = first; value <= last; value += step) {
      mask |= uint64_t{1} << value;
    }
  }
  if (seen != commas + 1) {
    return bad_field(field, text, "has an empty list item");
  }
  return mask;
}

// "10s", "5m", "1h30m" -> seconds; 0 when not understood.
int64_t interval_seconds(const std::string& text) {
  int64_t total = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t start = at;
    int64_t count = 0;
    while (at < text.size() && isdigit(static_cast<unsigned char>(text[at])) && at - start < 9) {
      count = count * 10 + (text[at++] - '0');
    }
    if (at == start || at == text.size()) {
      return 0;
    }
    char unit = text[at++];
    int64_t unit_s = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
    if (unit_s == 0) {
      return 0;
    }
    total += count * unit_s;
  }
  return total;
}

int first_bit_from(uint64_t mask, int from) {
  uint64_t rest = from >= 64 ? 0 : mask >> from;
  return rest == 0 ? -1 : from + __builtin_ctzll(rest);
}

}  // namespace

Result<CronSpec> CronSpec::parse(const std::string& raw, const TimeZone& zone) {
  size_t first = raw.find_first_not_of(" \t");
  size_t last = raw.find_last_not_of(" \t");
  std::string text = first == std::string::npos ? "" : raw.substr(first, last - first + 1);
  CronSpec spec(zone);
  spec.text_ = text;
  std::string fields_text = text;
  std::string shorthand = ascii_lower(text);
  if (shorthand.rfind("@every", 0) == 0) {
    size_t at = shorthand.find_first_not_of(" \t", 6);
    int64_t seconds =
        at == 6 || at == std::string::npos ? 0 : interval_seconds(shorthand.substr(at));
    if (seconds <= 0 || seconds > kLongestIntervalS) {
      return Status(Code::kInvalid, "schedule '" + text +
                                        "': @every needs a length from 1s to 8784h, "
                                        "e.g. @every 10s, @every 5m, @every 1h30m");
    }
    spec.interval_ms_ = seconds * 1000;
    return spec;
  }
  static const std::pair<const char*, const char*> kShorthands[] = {
      {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@weekly", "0 0 * * 0"},  {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
      {"@annually", "0 0 1 1 *"}};
  if (!shorthand.empty() && shorthand[0] == '@') {
    auto known = std::find_if(std::begin(kShorthands), std::end(kShorthands),
                              [&](const auto& entry) { return shorthand == entry.first; });
    if (known == std::end(kShorthands)) {
      return Status(Code::kInvalid, "schedule '" + text + "' is not understood: " + kScheduleForms);
    }
    fields_text = known->second;
  }
  std::istringstream words(fields_text);
  std::vector<std::string> fields;
  for (std::string word; words >> word;) {
    fields.push_back(word);
  }
  if (fields.size() != 5) {
    return Status(Code::kInvalid, "schedule '" + text + "' has " + std::to_string(fields.size()) +
                                      " fields: " + kScheduleForms);
  }
  uint64_t* masks[] = {&spec.minutes_, &spec.hours_, &spec.days_of_month_, &spec.months_,
                       &spec.days_of_week_};
  for (size_t i = 0; i < 5; ++i) {
    auto mask = parse_field(kCronFields[i], fields[i]);
    if (!mask.is_ok()) {
      return Status(Code::kInvalid, "schedule '" + text + "': " + mask.status().message());
    }
    *masks[i] = *mask;
  }
  if (spec.days_of_week_ & (uint64_t{1} << 7)) {
    spec.days_of_week_ = (spec.days_of_week_ | 1) & 0x7f;  // 7 is Sunday
  }
  spec.day_of_month_star_ = fields[2][0] == '*';
  spec.day_of_week_star_ = fields[4][0] == '*';
  if (!spec.next_matching_wall_minute(wall_seconds(CivilTime{2000, 1, 1, 0, 0, 0}))) {
    return Status(Code::kInvalid, "schedule '" + text + "' never matches a date");
  }
  return spec;
}

bool CronSpec::day_matches(int64_t days) const {
  CivilTime date = civil_from_days(days);
  bool month_day = (days_of_month_ >> date.day) & 1;
  bool week_day = (days_of_week_ >> weekday_from_days(days)) & 1;
  // Vixie cron: when either field starts with '*' both must match (a bare
  // '*' matches every day); when both are restricted, either is enough.
  if (day_of_month_star_ || day_of_week_star_) {
    return month_day && week_day;
  }
  return month_day || week_day;
}

std::optional<int64_t> CronSpec::next_matching_wall_minute(int64_t wall_s) const {
  int64_t start = floor_div(wall_s + 59, 60) * 60;
  int64_t days = floor_div(start, 86400);
  int hour = static_cast<int>((start - days * 86400) / 3600);
  int minute = static_cast<int>((start - days * 86400) / 60 % 60);
  for (int64_t limit = days + kSearchDays; days <= limit;) {
    CivilTime date = civil_from_days(days);
    if (!((months_ >> date.month) & 1)) {
      int next_month = date.month % 12 + 1;
      days = days_from_civil(date.year + (date.month == 12), next_month, 1);
      hour = minute = 0;
      continue;
    }
    int h = day_matches(days) ? first_bit_from(hours_, hour) : -1;
    if (h < 0) {
      ++days;
      hour = minute = 0;
      continue;
    }
    int m = first_bit_from(minutes_, h == hour ? minute : 0);
    if (m < 0) {
      hour = h + 1;
      minute = 0;
      if (hour == 24) {
        ++days;
        hour = 0;
      }
      continue;
    }
    return days * 86400 + int64_t{h} * 3600 + int64_t{m} * 60;
  }
  return std::nullopt;
}

std::optional<int64_t> CronSpec::next_after(int64_t after_ms) const {
  if (interval_ms_ > 0) {
    return (floor_div(after_ms, interval_ms_) + 1) * interval_ms_;
  }
  int64_t after_s = floor_div(after_ms, 1000);
  // Wall minutes from the clock's time at after_s on; right after a jump
  // forward, from the start of the gap, whose wall times tick after the jump.
  UtcOffsetPeriod period = zone_.period_at(after_s);
  UtcOffsetPeriod before = zone_.period_at(period.begin - 1);
  int64_t wall = after_s + period.offset_s;
  if (before.offset_s < period.offset_s &&
      after_s < period.begin + (period.offset_s - before.offset_s)) {
    wall = period.begin + before.offset_s;
  }
  std::optional<int64_t> best;
  int64_t scan_until = 0;  // with a tick from a gap: later wall minutes may tick before it
  for (int rounds = 0; rounds < 100000; ++rounds) {
    auto minute = next_matching_wall_minute(wall);
    if (!minute || (best && *minute >= scan_until)) {
      break;
    }
    WallTimeInstants instants = zone_.instants_at(*minute);
    int64_t tick = instants.first * 1000;
    if (tick > after_ms && (!best || tick < *best)) {
      best = tick;
      scan_until = instants.count == 0 ? zone_.wall_seconds_at(instants.first) : *minute;
    }
    wall = *minute + 60;
  }
  return best;
}

std::vector<int64_t> CronSpec::next_runs(int64_t after_ms, size_t count) const {
  std::vector<int64_t> runs;
  for (auto at = next_after(after_ms); at && runs.size() < count; at = next_after(*at)) {
    runs.push_back(*at);
  }
  return runs;
}

}  // namespace dq

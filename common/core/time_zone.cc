// Implements common/core/time_zone.h. The date library gives each zone's
// listed changes; past the last one (2037 in Debian's files) the file's own
// closing rule takes over, which the library does not read.
#include "common/core/time_zone.h"

#include <date/tz.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace dq {

namespace {

// Where Debian's tzdata keeps the compiled zones; the date library built
// with USE_OS_TZDB reads the same folder.
constexpr const char* kZoneInfoDir = "/usr/share/zoneinfo";

// The date library marks "no later change" with an end in the year 32767.
constexpr int64_t kLastListedEnd = 253402300799;  // 9999-12-31 23:59:59 UTC

// No zone's offset has been beyond 26 hours either way (LMTs included).
constexpr int64_t kWidestOffset = int64_t{26} * 3600;

// The POSIX TZ string that ends a TZif file of version 2 or later: the text
// between its last two newlines (tzfile(5)). "" when there is none.
std::string closing_rule_text(const std::string& zone_name) {
  std::ifstream file(std::string(kZoneInfoDir) + "/" + zone_name, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  std::string content = bytes.str();
  if (content.size() < 6 || content.compare(0, 4, "TZif") != 0 || content[4] < '2' ||
      content.back() != '\n') {
    return "";
  }
  size_t start = content.rfind('\n', content.size() - 2);
  return start == std::string::npos ? "" : content.substr(start + 1, content.size() - start - 2);
}

}  // namespace

struct TimeZone::Data {
  std::string name;
  const date::time_zone* zone = nullptr;
  std::optional<PosixTzRule> closing_rule;  // only when it has daylight saving
};

Result<TimeZone> TimeZone::find(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Data>> found;
  std::lock_guard<std::mutex> lock(mutex);
  auto known = found.find(name);
  if (known != found.end()) {
    return TimeZone(known->second);
  }
  if (name == "localtime") {  // a link to the host's own zone: hosts differ
    return Status(Code::kInvalid,
                  "time zone 'localtime' is the host's own zone: name it "
                  "(an IANA name such as Europe/Paris or UTC)");
  }
  try {
    (void)date::get_tzdb();
  } catch (const std::exception& e) {
    return Status(Code::kInternal, std::string("the time zone database in ") + kZoneInfoDir +
                                       " could not be read (is tzdata installed?): " + e.what());
  }
  auto data = std::make_shared<Data>();
  try {
    data->zone = date::locate_zone(name);
  } catch (const std::exception&) {
    return Status(Code::kInvalid, "time zone '" + name +
                                      "' is not in the tz database: use an IANA name such as "
                                      "Europe/Paris, America/New_York or UTC");
  }
  data->name = name;
  auto rule = PosixTzRule::parse(closing_rule_text(std::string(data->zone->name())));
  if (rule && rule->has_daylight_saving()) {
    data->closing_rule = rule;
  }
  found.emplace(name, data);
  return TimeZone(data);
}

const std::string& TimeZone::name() const { return data_->name; }

UtcOffsetPeriod TimeZone::period_at(int64_t epoch_s) const {
  auto info = data_->zone->get_info(date::sys_seconds{std::chrono::seconds{epoch_s}});
  UtcOffsetPeriod listed{info.begin.time_since_epoch().count(), info.end.time_since_epoch().count(),
                         static_cast<int32_t>(info.offset.count())};
  if (!data_->closing_rule || listed.end <= kLastListedEnd) {
    return listed;
  }
  UtcOffsetPeriod ruled = data_->closing_rule->period_at(epoch_s);
  ruled.begin = std::max(ruled.begin, listed.begin);
  return ruled;
}

int64_t TimeZone::wall_seconds_at(int64_t epoch_s) const {
  return epoch_s + period_at(epoch_s).offset_s;
}

WallTimeInstants TimeZone::instants_at(int64_t wall_s) const {
  // Every period within the widest offset of wall_s may show it: walk them
  // in order, keep the instants that fall inside their own period, and note
  // a jump forward over wall_s.
  WallTimeInstants out;
  out.count = 0;
  std::optional<UtcOffsetPeriod> before;
  int64_t at = wall_s - kWidestOffset;
  while (true) {
    UtcOffsetPeriod period = period_at(at);
    int64_t instant = wall_s - period.offset_s;
    if (instant >= period.begin && instant < period.end) {
      if (out.count == 0) {
        out.first = instant;
      } else if (out.count == 1) {
        out.second = instant;
      }
      out.count = std::min(out.count + 1, 2);
    } else if (before && out.count == 0 && before->end + before->offset_s <= wall_s &&
               wall_s < period.begin + period.offset_s) {
      out.first = wall_s - before->offset_s;  // read with the offset before the jump
      out.gap_end = period.begin;
    }
    if (period.end > wall_s + kWidestOffset) {
      break;
    }
    before = period;
    at = period.end;
  }
  return out;
}

}  // namespace dq

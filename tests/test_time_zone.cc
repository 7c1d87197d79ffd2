// Unit tests of time zones (common/core/time_zone.h, posix_tz_rule.h,
// civil_time.h) and of `at` with a `tz` (common/core/time_text.h): the rule
// for skipped and repeated wall times, checked against Python's zoneinfo
// (tests/support/time_oracle.py) for every hour and half hour of the 2026
// changes of Europe/Paris and America/New_York, and around every change of
// a dozen zones up to 2100 (past the last change Debian's files list).
#include <doctest/doctest.h>

#include <cstdio>

#include "common/core/civil_time.h"
#include "common/core/posix_tz_rule.h"
#include "common/core/time_text.h"
#include "common/core/time_zone.h"
#include "tests/support/time_oracle.h"

using namespace dq;

namespace {

int64_t utc(int year, int month, int day, int hour, int minute = 0) {
  return wall_seconds(CivilTime{year, month, day, hour, minute, 0});
}

TimeZone zone(const std::string& name) {
  auto found = TimeZone::find(name);
  REQUIRE_MESSAGE(found.is_ok(), name << ": " << found.status().message());
  return *found;
}

std::string wall_text(int64_t wall_s, char separator = ' ') {
  CivilTime c = civil_from_wall_seconds(wall_s);
  char text[32];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02d%c%02d:%02d:%02d", c.year, c.month, c.day,
                separator, c.hour, c.minute, c.second);
  return text;
}

}  // namespace

TEST_CASE("the calendar counts days both ways, weekdays included") {
  CHECK(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(2026, 3, 29) == 20541);
  CHECK(weekday_from_days(days_from_civil(2026, 3, 29)) == 0);   // a Sunday
  CHECK(weekday_from_days(days_from_civil(1969, 12, 31)) == 3);  // a Wednesday
  CHECK(weekday_from_days(days_from_civil(1970, 1, 1)) == 4);
  for (int64_t days = -800000; days <= 800000; days += 997) {
    CivilTime c = civil_from_days(days);
    REQUIRE(days_from_civil(c.year, c.month, c.day) == days);
    REQUIRE(c.day <= days_in_month(c.year, c.month));
    REQUIRE(weekday_from_days(days + 7) == weekday_from_days(days));
  }
  CHECK(days_in_month(2024, 2) == 29);
  CHECK(days_in_month(2100, 2) == 28);
  CHECK(days_in_month(2000, 2) == 29);
  CivilTime before_epoch = civil_from_wall_seconds(-1);
  CHECK(before_epoch.year == 1969);
  CHECK(before_epoch.hour == 23);
  CHECK(before_epoch.second == 59);
}

TEST_CASE("an unknown zone is a clear error that names it") {
  for (const char* bad : {"Nope/Zone", "", "europe/paris", "../../etc/passwd", "Europe",
                          "posixrules", "right/UTC", "Europe/Paris "}) {
    auto found = TimeZone::find(bad);
    REQUIRE_FALSE(found.is_ok());
    CHECK(found.status().code() == Code::kInvalid);
    CHECK(found.status().message().find(std::string("'") + bad + "'") != std::string::npos);
  }
  // The host's own zone differs between hosts: it must be named.
  auto local = TimeZone::find("localtime");
  REQUIRE_FALSE(local.is_ok());
  CHECK(local.status().message().find("host's own zone") != std::string::npos);
  CHECK(zone("UTC").name() == "UTC");
  CHECK(zone("US/Eastern").name() == "US/Eastern");  // a link is a name too
  auto at = resolve_due_time(Json("2026-03-29 09:00"), "Mars/Olympus");
  REQUIRE_FALSE(at.is_ok());
  CHECK(at.status().message().find("'Mars/Olympus'") != std::string::npos);
}

TEST_CASE("a skipped wall time moves forward by the gap; a repeated one is its first occurrence") {
  TimeZone paris = zone("Europe/Paris");
  // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC).
  WallTimeInstants gap = paris.instants_at(utc(2026, 3, 29, 2, 30));
  CHECK(gap.count == 0);
  CHECK(gap.first == utc(2026, 3, 29, 1, 30));  // 03:30 CEST
  CHECK(gap.gap_end == utc(2026, 3, 29, 1, 0));
  CHECK(paris.resolve(utc(2026, 3, 29, 2, 0)) == utc(2026, 3, 29, 1, 0));  // 03:00 CEST
  CHECK(paris.resolve(utc(2026, 3, 29, 3, 0)) == utc(2026, 3, 29, 1, 0));
  CHECK(paris.resolve(utc(2026, 3, 29, 1, 59)) == utc(2026, 3, 29, 0, 59));
  // 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC).
  WallTimeInstants twice = paris.instants_at(utc(2026, 10, 25, 2, 30));
  CHECK(twice.count == 2);
  CHECK(twice.first == utc(2026, 10, 25, 0, 30));   // CEST
  CHECK(twice.second == utc(2026, 10, 25, 1, 30));  // CET
  CHECK(paris.resolve(utc(2026, 10, 25, 3, 0)) == utc(2026, 10, 25, 2, 0));
  CHECK(paris.instants_at(utc(2026, 7, 1, 12)).count == 1);
  CHECK(paris.wall_seconds_at(utc(2026, 10, 25, 0, 30)) == utc(2026, 10, 25, 2, 30));
  CHECK(paris.wall_seconds_at(utc(2026, 10, 25, 1, 30)) == utc(2026, 10, 25, 2, 30));
  // Past the last change the file lists (2037), its closing rule.
  CHECK(paris.instants_at(utc(2040, 3, 25, 2, 30)).count == 0);
  CHECK(paris.resolve(utc(2040, 7, 1, 12)) == utc(2040, 7, 1, 10));
  CHECK(paris.instants_at(utc(2100, 10, 31, 2, 30)).count == 2);
  CHECK(paris.resolve(utc(2100, 12, 1, 12)) == utc(2100, 12, 1, 11));

  TimeZone new_york = zone("America/New_York");
  CHECK(new_york.resolve(utc(2026, 3, 8, 2, 30)) == utc(2026, 3, 8, 7, 30));  // 03:30 EDT
  WallTimeInstants fall = new_york.instants_at(utc(2026, 11, 1, 1, 30));
  CHECK(fall.count == 2);
  CHECK(fall.first == utc(2026, 11, 1, 5, 30));   // EDT
  CHECK(fall.second == utc(2026, 11, 1, 6, 30));  // EST

  TimeZone shanghai = zone("Asia/Shanghai");
  CHECK(shanghai.resolve(utc(2026, 3, 29, 2, 30)) == utc(2026, 3, 28, 18, 30));
  CHECK(shanghai.instants_at(utc(2026, 11, 1, 1, 30)).count == 1);
}

TEST_CASE("`at` with `tz`: every form of a wall time, in the zone; instants ignore it") {
  auto at = [](const std::string& text, const std::string& tz) {
    auto due = resolve_due_time(Json(text), tz);
    REQUIRE_MESSAGE(due.is_ok(), text << " " << tz << ": " << due.status().message());
    CHECK_FALSE(due->relative);
    return due->ms;
  };
  int64_t nine_paris = utc(2026, 3, 29, 7) * 1000;  // 09:00 CEST
  CHECK(at("2026-03-29 09:00", "Europe/Paris") == nine_paris);
  CHECK(at("2026-03-29 09:00:00", "Europe/Paris") == nine_paris);
  CHECK(at("2026-03-29T09:00", "Europe/Paris") == nine_paris);
  CHECK(at("2026-03-29T09:00:00", "Europe/Paris") == nine_paris);
  CHECK(at("2026-03-29 09:00:00.250", "Europe/Paris") == nine_paris + 250);
  CHECK(at("2026-03-29", "Europe/Paris") == utc(2026, 3, 28, 23) * 1000);  // midnight CET
  CHECK(at("2026-03-29 09:00", "Asia/Shanghai") == utc(2026, 3, 29, 1) * 1000);
  // Forms that name an instant on their own are that instant in any zone.
  CHECK(at("2026-03-29T09:00:00+08:00", "Europe/Paris") == utc(2026, 3, 29, 1) * 1000);
  CHECK(at("2026-03-29T09:00:00Z", "Asia/Shanghai") == utc(2026, 3, 29, 9) * 1000);
  CHECK(at("1774774800", "Europe/Paris") == 1774774800000);
  auto relative = resolve_due_time(Json("+5 minutes"), "Europe/Paris");
  REQUIRE(relative.is_ok());
  CHECK(relative->relative);
  CHECK(relative->ms == 300000);
  // A bad date is refused with a zone as without one.
  CHECK(resolve_due_time(Json("2026-02-30 09:00"), "Europe/Paris").status().code() ==
        Code::kInvalid);
}

TEST_CASE("`at` with `tz` agrees with Python's zoneinfo on every hour of the 2026 changes") {
  // Both changes of Paris and New York (and the same days in Shanghai, which
  // has none): every half hour from 22:00 the day before to 06:00 the day
  // after, as "Y-m-d H:i" and as ISO "Y-m-dTH:i:s".
  struct Day {
    const char* zone;
    int month;
    int day;
  };
  const Day days[] = {{"Europe/Paris", 3, 29},    {"Europe/Paris", 10, 25},
                      {"America/New_York", 3, 8}, {"America/New_York", 11, 1},
                      {"Asia/Shanghai", 3, 29},   {"Asia/Shanghai", 11, 1}};
  struct Asked {
    std::string zone;
    std::string text;
    int64_t wall;
  };
  Json request = {{"walls", Json::array()}};
  std::vector<Asked> asked;
  for (const Day& d : days) {
    int64_t from = utc(2026, d.month, d.day, 0) - int64_t{2} * 3600;
    for (int64_t wall = from; wall <= from + int64_t{32} * 3600; wall += 1800) {
      for (const std::string& text : {wall_text(wall).substr(0, 16), wall_text(wall, 'T')}) {
        request["walls"].push_back({d.zone, wall_text(wall)});
        asked.push_back({d.zone, text, wall});  // "2026-03-29 02:30", "2026-03-29T02:30:00"
      }
    }
  }
  Json answer = test::ask_time_oracle(request);
  REQUIRE(answer["walls"].size() == asked.size());
  int skipped = 0, repeated = 0;
  for (size_t i = 0; i < asked.size(); ++i) {
    auto due = resolve_due_time(Json(asked[i].text), asked[i].zone);
    REQUIRE(due.is_ok());
    INFO(asked[i].zone << " " << asked[i].text);
    CHECK(due->ms == answer["walls"][i].get<int64_t>() * 1000);
    int count = zone(asked[i].zone).instants_at(asked[i].wall).count;
    skipped += count == 0;
    repeated += count == 2;
  }
  // Both kinds were asked: the two half hours of each gap and of each
  // overlap, in two forms, in two zones.
  CHECK(skipped == 8);
  CHECK(repeated == 8);
}

TEST_CASE("every zone's offsets agree with Python's zoneinfo around each change, up to 2100") {
  // Past 2037 Debian's files list no changes; their closing rule
  // (posix_tz_rule.h) gives them. Southern zones, negative daylight saving
  // (Dublin), half-hour shifts (Lord Howe), rule times past 24:00
  // (Jerusalem) and before 00:00 (Nuuk) included.
  const char* zones[] = {"Europe/Paris",     "America/New_York",  "Asia/Shanghai",
                         "Australia/Sydney", "America/Santiago",  "Europe/Dublin",
                         "Asia/Jerusalem",   "America/Nuuk",      "Australia/Lord_Howe",
                         "Pacific/Auckland", "Africa/Casablanca", "America/Sao_Paulo"};
  Json request = {{"walls", Json::array()}, {"instants", Json::array()}};
  std::vector<std::pair<std::string, int64_t>> walls;
  std::vector<std::pair<std::string, int64_t>> instants;
  int changes = 0;
  for (const char* name : zones) {
    TimeZone tz = zone(name);
    for (int year : {2026, 2037, 2038, 2040, 2100}) {
      for (int64_t day = days_from_civil(year, 1, 1); day < days_from_civil(year + 1, 1, 1);
           day += 3) {
        walls.emplace_back(name, day * 86400 + int64_t{12} * 3600);  // noon every third day
      }
      int64_t end = utc(year + 1, 1, 1, 0);
      for (UtcOffsetPeriod p = tz.period_at(utc(year, 1, 1, 0)); p.end < end;
           p = tz.period_at(p.end)) {
        ++changes;
        int64_t wall_before = p.end + p.offset_s;
        for (int64_t step = int64_t{-3} * 3600; step <= int64_t{3} * 3600; step += 900) {
          walls.emplace_back(name, wall_before + step);
          instants.emplace_back(name, p.end + step);
        }
      }
    }
  }
  CHECK(changes > 80);  // 98 with tzdata 2025b: Shanghai and Sao Paulo have none
  for (const auto& [name, wall] : walls) {
    request["walls"].push_back({name, wall_text(wall)});
  }
  for (const auto& [name, instant] : instants) {
    request["instants"].push_back({name, instant});
  }
  Json answer = test::ask_time_oracle(request);
  REQUIRE(answer["walls"].size() == walls.size());
  REQUIRE(answer["instants"].size() == instants.size());
  int wrong = 0;
  for (size_t i = 0; i < walls.size(); ++i) {
    int64_t ours = zone(walls[i].first).resolve(walls[i].second);
    if (ours != answer["walls"][i].get<int64_t>()) {
      if (++wrong < 10) {
        MESSAGE(walls[i].first << " " << wall_text(walls[i].second) << ": " << ours << " vs "
                               << answer["walls"][i]);
      }
    }
  }
  for (size_t i = 0; i < instants.size(); ++i) {
    std::string ours = wall_text(zone(instants[i].first).wall_seconds_at(instants[i].second));
    if (ours != answer["instants"][i].get<std::string>()) {
      if (++wrong < 20) {
        MESSAGE(instants[i].first << " @" << instants[i].second << ": " << ours << " vs "
                                  << answer["instants"][i]);
      }
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("a zone file's closing rule: the forms tzfile(5) allows, and nothing else") {
  auto paris = PosixTzRule::parse("CET-1CEST,M3.5.0,M10.5.0/3");
  REQUIRE(paris);
  CHECK(paris->has_daylight_saving());
  UtcOffsetPeriod summer = paris->period_at(utc(2040, 7, 1, 0));
  CHECK(summer.offset_s == 7200);
  CHECK(summer.begin == utc(2040, 3, 25, 1));  // last Sunday of March, 02:00 CET
  CHECK(summer.end == utc(2040, 10, 28, 1));   // last Sunday of October, 03:00 CEST
  CHECK(paris->period_at(utc(2040, 12, 1, 0)).offset_s == 3600);

  auto fixed = PosixTzRule::parse("<+08>-8");
  REQUIRE(fixed);
  CHECK_FALSE(fixed->has_daylight_saving());
  CHECK(fixed->period_at(0).offset_s == 8 * 3600);
  REQUIRE(PosixTzRule::parse("UTC0"));
  REQUIRE(PosixTzRule::parse("<-03>3"));

  // Julian days: J60 is March 1st in every year; a zero-based 59 is March 1st
  // only in a common year.
  auto julian = PosixTzRule::parse("XST5XDT,J60/0,J300/0");
  REQUIRE(julian);
  CHECK(julian->period_at(utc(2040, 3, 1, 5)).offset_s == -4 * 3600);  // 2040 is a leap year
  CHECK(julian->period_at(utc(2040, 3, 1, 4)).offset_s == -5 * 3600);
  auto zero_based = PosixTzRule::parse("XST5XDT,59/0,300/0");
  REQUIRE(zero_based);
  CHECK(zero_based->period_at(utc(2040, 2, 29, 5)).offset_s == -4 * 3600);

  // Daylight saving all year (version 3): never back to standard time.
  auto all_year = PosixTzRule::parse("EST5EDT,0/0,J365/25");
  REQUIRE(all_year);
  for (int month = 1; month <= 12; ++month) {
    CHECK(all_year->period_at(utc(2041, month, 15, 0)).offset_s == -4 * 3600);
  }
  CHECK(all_year->period_at(utc(2041, 1, 1, 4, 30)).offset_s == -4 * 3600);

  for (const char* bad :
       {"", "C", "CET", "CET-1CEST", "CET-1CEST,M3.5.0", "CET-1CEST,M13.1.0,M10.5.0",
        "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,M3.5.7,M10.5.0", "CET-1CEST,J0,J300",
        "CET-1CEST,366,300", "CET-1CEST,M3.5.0/168,M10.5.0", "CET-25", "<>-1", "<+01-1",
        "CET-1CEST,M3.5.0,M10.5.0 "}) {
    CHECK_MESSAGE(!PosixTzRule::parse(bad), bad);
  }
}

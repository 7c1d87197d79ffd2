// Unit tests of delivery windows (common/core/delivery_window.h) and late
// policies (common/core/late_policy.h): parsing and its errors, openness,
// the next opening across midnight and across daylight saving changes, and
// the next opening checked against a minute-by-minute scan.
#include <doctest/doctest.h>

#include "common/core/civil_time.h"
#include "common/core/delivery_window.h"
#include "common/core/late_policy.h"

using namespace dq;

namespace {

int64_t utc_ms(int year, int month, int day, int hour, int minute = 0, int second = 0) {
  return wall_seconds(CivilTime{year, month, day, hour, minute, second}) * 1000;
}

TimeZone zone(const std::string& name) {
  auto found = TimeZone::find(name);
  REQUIRE(found.is_ok());
  return *found;
}

DeliveryWindow window(const std::string& text, const std::string& tz = "UTC") {
  auto parsed = DeliveryWindow::parse(text, zone(tz));
  REQUIRE_MESSAGE(parsed.is_ok(), text << ": " << parsed.status().message());
  return *parsed;
}

}  // namespace

TEST_CASE("a bad delivery window is refused and says which word is wrong") {
  struct Bad {
    const char* text;
    const char* says;
  };
  const Bad bad[] = {
      {"", "is empty"},
      {"   ", "is empty"},
      {"Mon-Fri", "days 'Mon-Fri' have no hours"},
      {"Mon Tue 09:00-10:00", "days 'Mon' have no hours"},
      {"Mon-Fri 09:00-18:00 Sat", "days 'Sat' have no hours"},
      {"Mon-Fri 09:00", "'09:00' is not a range of hours"},
      {"09:00-09:00", "is empty: use 00:00-24:00"},
      {"25:00-26:00", "'25:00-26:00' is not a range of hours"},
      {"09:60-10:00", "is not a range of hours"},
      {"24:00-01:00", "is not a range of hours"},
      {"24:30-01:00", "is not a range of hours"},
      {"9:00-18:00", "'9:00-18:00' is not a range of hours"},
      {"09:00-18:00,", "'' is not a range of hours"},
      {"09:00-18:00-19:00", "is not a range of hours"},
      {"Mon-Fri 09:00-18:00 Nope/Zone", "'Nope/Zone' is not days, hours or a time zone"},
      {"Mon-Fri 09:00-18:00 Europe/Paris Sat", "'Europe/Paris' is not days"},
      {"Mondays 09:00-10:00", "'Mondays' is not days"},
      {"Mon- 09:00-10:00", "'Mon-' is not days"},
      {"Mon,,Tue 09:00-10:00", "is not days"},
      {"Mon-Fri 09:00-18:00 localtime", "host's own zone"},
  };
  for (const Bad& b : bad) {
    auto parsed = DeliveryWindow::parse(b.text, zone("UTC"));
    REQUIRE_MESSAGE(!parsed.is_ok(), b.text);
    CHECK(parsed.status().code() == Code::kInvalid);
    CHECK_MESSAGE(parsed.status().message().find(b.says) != std::string::npos,
                  b.text << " -> " << parsed.status().message());
  }
}

TEST_CASE("business hours in a named zone: open inside, the next opening outside") {
  DeliveryWindow w = window("Mon-Fri 09:00-18:00 Asia/Shanghai", "Europe/Paris");
  CHECK(w.zone().name() == "Asia/Shanghai");
  CHECK(w.text() == "Mon-Fri 09:00-18:00 Asia/Shanghai");
  // Monday 2026-03-30, 09:00 in Shanghai is 01:00 UTC.
  CHECK(w.is_open_at(utc_ms(2026, 3, 30, 1)));
  CHECK_FALSE(w.is_open_at(utc_ms(2026, 3, 30, 1) - 1));
  CHECK(w.is_open_at(utc_ms(2026, 3, 30, 10) - 1));  // 17:59:59.999
  CHECK_FALSE(w.is_open_at(utc_ms(2026, 3, 30, 10)));
  CHECK_FALSE(w.is_open_at(utc_ms(2026, 3, 28, 3)));  // Saturday 11:00
  // Open: the time itself; closed: the next opening.
  CHECK(*w.next_open(utc_ms(2026, 3, 30, 5, 0, 7)) == utc_ms(2026, 3, 30, 5, 0, 7));
  CHECK(*w.next_open(utc_ms(2026, 3, 30, 0, 59, 59) + 1) == utc_ms(2026, 3, 30, 1));
  CHECK(*w.next_open(utc_ms(2026, 3, 27, 10)) == utc_ms(2026, 3, 30, 1));  // Friday 18:00
  CHECK(*w.next_open(utc_ms(2026, 3, 28, 3)) == utc_ms(2026, 3, 30, 1));   // Saturday
  CHECK(*w.next_open(utc_ms(2026, 3, 30, 10)) == utc_ms(2026, 3, 31, 1));  // Monday 18:00

  // Without a zone in the text: the caller's.
  DeliveryWindow paris = window("09:00-18:00", "Europe/Paris");
  CHECK(paris.zone().name() == "Europe/Paris");
  CHECK(paris.is_open_at(utc_ms(2026, 3, 28, 8)));  // Saturday 09:00 CET: every day
  CHECK_FALSE(paris.is_open_at(utc_ms(2026, 3, 28, 7, 59)));
  CHECK(window("monday-friday 09:00-18:00").is_open_at(utc_ms(2026, 3, 30, 9)));
}

TEST_CASE("across midnight, several groups, week-end ranges") {
  DeliveryWindow night = window("22:00-06:00");
  CHECK(night.is_open_at(utc_ms(2026, 3, 30, 23)));
  CHECK(night.is_open_at(utc_ms(2026, 3, 31, 5, 59, 59)));
  CHECK_FALSE(night.is_open_at(utc_ms(2026, 3, 31, 6)));
  CHECK(night.is_open_at(utc_ms(2026, 3, 31, 0)));
  CHECK(*night.next_open(utc_ms(2026, 3, 31, 12)) == utc_ms(2026, 3, 31, 22));

  // A night belongs to the day it starts on: Friday night runs into Saturday.
  DeliveryWindow friday = window("Fri 22:00-06:00");
  CHECK(friday.is_open_at(utc_ms(2026, 3, 27, 23)));        // Friday 23:00
  CHECK(friday.is_open_at(utc_ms(2026, 3, 28, 3)));         // Saturday 03:00
  CHECK_FALSE(friday.is_open_at(utc_ms(2026, 3, 28, 23)));  // Saturday 23:00
  CHECK_FALSE(friday.is_open_at(utc_ms(2026, 3, 27, 3)));   // Friday 03:00 (Thursday's night)
  CHECK(*friday.next_open(utc_ms(2026, 3, 28, 7)) == utc_ms(2026, 4, 3, 22));

  DeliveryWindow split = window("Mon-Fri 09:00-12:00,14:00-18:00; Sat 10:00-14:00");
  CHECK_FALSE(split.is_open_at(utc_ms(2026, 3, 30, 13)));
  CHECK(*split.next_open(utc_ms(2026, 3, 30, 13)) == utc_ms(2026, 3, 30, 14));
  CHECK(split.is_open_at(utc_ms(2026, 3, 28, 11)));  // Saturday
  CHECK(*split.next_open(utc_ms(2026, 3, 28, 14)) == utc_ms(2026, 3, 30, 9));
  CHECK(window("Mon-Fri 09:00-12:00 14:00-18:00 Sat 10:00-14:00")
            .is_open_at(utc_ms(2026, 3, 30, 15)));

  DeliveryWindow weekend = window("Fri-Mon 10:00-11:00");    // wraps over the week's end
  CHECK(weekend.is_open_at(utc_ms(2026, 3, 28, 10)));        // Saturday
  CHECK(weekend.is_open_at(utc_ms(2026, 3, 29, 10)));        // Sunday
  CHECK(weekend.is_open_at(utc_ms(2026, 3, 30, 10)));        // Monday
  CHECK_FALSE(weekend.is_open_at(utc_ms(2026, 3, 31, 10)));  // Tuesday
  CHECK(window("00:00-24:00").is_open_at(utc_ms(2026, 3, 31, 23, 59, 59)));
  CHECK(window("Sun,Sat 00:00-24:00").is_open_at(utc_ms(2026, 3, 29, 0)));
}

TEST_CASE("across daylight saving: the window follows the wall clock") {
  // Paris 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00 UTC. A window
  // from 02:30 opens at the jump, when the clock first shows a time inside it.
  DeliveryWindow early = window("02:30-04:00 Europe/Paris");
  CHECK(*early.next_open(utc_ms(2026, 3, 29, 0, 30)) == utc_ms(2026, 3, 29, 1));
  CHECK(early.is_open_at(utc_ms(2026, 3, 29, 1)));
  CHECK_FALSE(early.is_open_at(utc_ms(2026, 3, 29, 2)));  // 04:00 CEST
  // A window entirely inside the gap does not open that day.
  DeliveryWindow gap = window("02:10-02:50 Europe/Paris");
  CHECK(*gap.next_open(utc_ms(2026, 3, 28, 12)) == utc_ms(2026, 3, 30, 0, 10));
  // Paris 2026-10-25: 03:00 CEST goes back to 02:00 CET at 01:00 UTC: the
  // repeated half hour is inside both times.
  DeliveryWindow repeated = window("02:30-02:45 Europe/Paris");
  CHECK(*repeated.next_open(utc_ms(2026, 10, 24, 23)) == utc_ms(2026, 10, 25, 0, 30));
  CHECK_FALSE(repeated.is_open_at(utc_ms(2026, 10, 25, 0, 50)));
  CHECK(*repeated.next_open(utc_ms(2026, 10, 25, 0, 50)) == utc_ms(2026, 10, 25, 1, 30));
  // Business hours keep their wall time on both sides of a change.
  DeliveryWindow office = window("Mon-Fri 09:00-18:00 America/New_York");
  CHECK(*office.next_open(utc_ms(2026, 3, 6, 23)) == utc_ms(2026, 3, 9, 13));     // EDT
  CHECK(*office.next_open(utc_ms(2026, 10, 30, 23)) == utc_ms(2026, 11, 2, 14));  // EST
}

TEST_CASE("the next opening is the first open minute a scan finds") {
  // Openings fall on whole minutes (a range's start, a change of offset),
  // so a scan minute by minute finds the same instant.
  const std::pair<const char*, const char*> windows[] = {
      {"Mon-Fri 09:00-18:00", "Asia/Shanghai"},
      {"22:00-06:00", "Europe/Paris"},
      {"Sat,Sun 02:15-03:30", "Europe/Paris"},
      {"Fri 23:30-01:30 Sun 01:00-02:10", "America/New_York"},
      {"02:30-02:40 03:00-03:05", "America/New_York"},
      {"Mon 00:00-00:01", "Australia/Lord_Howe"},
  };
  int checked = 0;
  for (const auto& entry : windows) {
    DeliveryWindow w = window(entry.first, entry.second);
    // Every 7 h 13 min 17 s through both 2026 changes of Europe and North America.
    for (int64_t t = utc_ms(2026, 3, 5, 0); t < utc_ms(2026, 4, 2, 0); t += 26'000'000 + 1'000) {
      for (int64_t start : {t, t + utc_ms(1970, 8, 2, 0)}) {  // March, and seven months on
        auto ours = w.next_open(start);
        REQUIRE(ours);
        int64_t scanned = start;
        if (!w.is_open_at(start)) {
          scanned = (start / 60000 + 1) * 60000;
          while (!w.is_open_at(scanned)) {
            scanned += 60000;
          }
        }
        INFO(entry.first << " " << entry.second << " from " << start);
        CHECK(*ours == scanned);
        ++checked;
      }
    }
  }
  CHECK(checked > 400);
}

TEST_CASE("late policy: deliver however late, or dead or dropped past its seconds") {
  LatePolicy deliver;
  CHECK(deliver.text() == "deliver");
  CHECK(deliver.decide(0, 100LL * 365 * 86400000) == LateAction::kDeliver);
  auto parsed = LatePolicy::parse("deliver");
  REQUIRE(parsed.is_ok());
  CHECK(parsed->decide(0, 1LL << 50) == LateAction::kDeliver);

  auto dead = LatePolicy::parse("dead_after:60");
  REQUIRE(dead.is_ok());
  CHECK(dead->text() == "dead_after:60");
  int64_t due = utc_ms(2026, 3, 30, 9);
  CHECK(dead->decide(due, due) == LateAction::kDeliver);
  CHECK(dead->decide(due, due + 60000) == LateAction::kDeliver);  // exactly 60 s: not late
  CHECK(dead->decide(due, due + 60001) == LateAction::kDead);
  CHECK(dead->decide(due, due + int64_t{5} * 60000) == LateAction::kDead);  // 5 minutes late
  CHECK(dead->decide(due, due - 1000) == LateAction::kDeliver);  // found early (clock skew)

  auto drop = LatePolicy::parse("drop_after:3600");
  REQUIRE(drop.is_ok());
  CHECK(drop->text() == "drop_after:3600");
  CHECK(drop->decide(due, due + 3600000) == LateAction::kDeliver);
  CHECK(drop->decide(due, due + 3600001) == LateAction::kDrop);
  CHECK(LatePolicy::parse("dead_after:315360000")->text() == "dead_after:315360000");
  CHECK(std::string(kLateReason) == "late");

  for (const char* bad :
       {"", "Deliver", "deliver ", "dead_after", "dead_after:", "dead_after:0", "dead_after:-5",
        "dead_after:1.5", "dead_after:60s", "dead_after: 60", "dead_after:315360001",
        "dead_after:99999999999", "drop_after:x", "drop:60", "dead_after=60"}) {
    auto refused = LatePolicy::parse(bad);
    REQUIRE_MESSAGE(!refused.is_ok(), bad);
    CHECK(refused.status().code() == Code::kInvalid);
    CHECK(refused.status().message().find(std::string("'") + bad + "'") != std::string::npos);
  }
}

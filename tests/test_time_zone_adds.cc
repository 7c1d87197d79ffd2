// `at` with `tz` through a real dqd: single adds (the fast path and the
// document path) and batch adds read a wall time in the named zone, every
// hour and half hour across both 2027 changes of Europe/Paris and
// America/New_York, by the rule of common/core/time_zone.h (a repeated wall
// time: its first occurrence; a skipped one: moved forward by the gap); the
// due times GET answers are checked against Python's zoneinfo
// (tests/support/time_oracle.py). Bad zones are 400s that write nothing.
// (The 2026 changes are in the past as this is written, and a past `at` is
// due at once, stored as Redis's now: tests/test_time_zone.cc checks them
// through the same parser; a test that ran before them was checked here.)
#include <doctest/doctest.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "common/core/civil_time.h"
#include "common/core/json.h"
#include "common/registry/registry.h"
#include "tests/support/dqd_process.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/redis_server.h"
#include "tests/support/time_oracle.h"

using dq::Json;

namespace {

int64_t utc(int year, int month, int day, int hour) {
  return dq::wall_seconds(dq::CivilTime{year, month, day, hour, 0, 0});
}

std::string wall_text(int64_t wall_s) {
  dq::CivilTime c = dq::civil_from_wall_seconds(wall_s);
  char text[32];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02d %02d:%02d:%02d", c.year, c.month, c.day, c.hour,
                c.minute, c.second);
  return text;
}

dq::test::DqdOptions one_of_each(const dq::test::TestRedis& redis) {
  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 1;
  return options;
}

// An offline topic: its jobs wait, so GET shows them whenever they are due.
dq::Status add_offline_topic(dq::test::DqdProcess& dqd, const std::string& name,
                             const std::string& tz = "") {
  dq::Topic topic;
  topic.name = name;
  topic.callback_url = "http://127.0.0.1:9/never";
  topic.online = false;
  topic.tz = tz;
  return dqd.registry().add_topic(topic);
}

}  // namespace

TEST_CASE("adds with at and tz land where the documented rule says, across the DST changes") {
  dq::test::TestRedis redis;
  dq::test::DqdProcess dqd(one_of_each(redis));
  REQUIRE(add_offline_topic(dqd, "reminders").is_ok());
  dqd.start();
  dq::test::HttpClient http;
  std::string jobs = dqd.jobs_url("reminders");

  struct Asked {
    std::string id, zone, wall;
  };
  struct Day {
    const char* zone;
    int month, day;
  };
  // The year of the changes: the next one wholly ahead of the machine's clock.
  const int year = dq::civil_from_wall_seconds(static_cast<int64_t>(std::time(nullptr))).year + 1;
  CHECK(year >= 2027);
  // Europe/Paris: the last Sundays of March and October; America/New_York:
  // the second Sunday of March and the first of November.
  auto sunday = [year](int month, int nth) {  // nth 1..4, or -1: the last
    int count = 0, last = 0;
    for (int day = 1; day <= 31; ++day) {
      int64_t s = utc(year, month, day, 12);
      if (dq::civil_from_wall_seconds(s).month != month) break;
      if ((s / 86400 + 4) % 7 == 0) {  // 1970-01-01 was a Thursday
        last = day;
        if (++count == nth) return day;
      }
    }
    return last;
  };
  const Day days[] = {{"Europe/Paris", 3, sunday(3, -1)},
                      {"Europe/Paris", 10, sunday(10, -1)},
                      {"America/New_York", 3, sunday(3, 2)},
                      {"America/New_York", 11, sunday(11, 1)}};
  std::vector<Asked> asked;
  Json oracle_request = {{"walls", Json::array()}};
  for (const Day& d : days) {
    int64_t from = utc(year, d.month, d.day, 0);
    for (int64_t wall = from; wall < from + int64_t{6} * 3600; wall += 1800) {
      std::string id = std::string(d.zone).substr(0, 6) + "-" + std::to_string(d.month) + "-" +
                       std::to_string(asked.size());
      asked.push_back({id, d.zone, wall_text(wall)});
      oracle_request["walls"].push_back({d.zone, wall_text(wall)});
    }
  }
  // Every third through a batch, the others one by one: a "tz" last (the
  // fast path) or first (the document path reads it the same way).
  Json batch = {{"jobs", Json::array()}};
  for (size_t i = 0; i < asked.size(); ++i) {
    const Asked& a = asked[i];
    std::string at = a.wall.substr(0, 16);  // "2026-03-29 02:30"
    if (i % 3 == 0) {
      batch["jobs"].push_back({{"id", a.id}, {"body", 1}, {"at", at}, {"tz", a.zone}});
      continue;
    }
    std::string doc = i % 3 == 1 ? R"({"id":")" + a.id + R"(","body":1,"at":")" + at +
                                       R"(","tz":")" + a.zone + R"("})"
                                 : R"({"tz":")" + a.zone + R"(","id":")" + a.id +
                                       R"(","body":{"n":1},"at":")" + at + R"("})";
    auto added = http.post(jobs, doc);
    REQUIRE_MESSAGE(added.status == 201, doc << " -> " << added.body);
  }
  auto batched = http.post(jobs + "/batch", batch.dump());
  REQUIRE_MESSAGE(batched.status == 200, batched.body);
  Json batch_answer = batched.json();  // kept: the loop runs over a part of it
  for (const Json& result : batch_answer["results"]) {
    CHECK_MESSAGE(result.value("status", 0) == 201, result.dump());
  }

  Json answer = dq::test::ask_time_oracle(oracle_request);
  REQUIRE(answer["walls"].size() == asked.size());
  int checked = 0;
  for (size_t i = 0; i < asked.size(); ++i) {
    auto got = http.get(jobs + "/" + asked[i].id);
    REQUIRE_MESSAGE(got.status == 200, asked[i].id << ": " << got.body);
    INFO(asked[i].zone << " " << asked[i].wall);
    CHECK(got.json()["due_at_ms"].get<int64_t>() == answer["walls"][i].get<int64_t>() * 1000);
    ++checked;
  }
  // Each day's six hours hold its change: its first and last wall times are
  // not 5.5 h of real time apart.
  for (size_t first = 0; first < asked.size(); first += 12) {
    int64_t spanned =
        answer["walls"][first + 11].get<int64_t>() - answer["walls"][first].get<int64_t>();
    CHECK_MESSAGE(spanned != 11 * 1800, asked[first].zone << " " << asked[first].wall);
  }
  MESSAGE(checked << " adds with a time zone checked against zoneinfo");
  CHECK(checked == 48);

  // An offset in the text names its own instant; tz does not move it.
  REQUIRE(http.post(jobs, R"({"id":"own-offset","body":1,"at":"2036-03-29T09:00:00+08:00",)"
                          R"("tz":"Europe/Paris"})")
              .status == 201);
  CHECK(http.get(jobs + "/own-offset").json()["due_at_ms"] == utc(2036, 3, 29, 1) * 1000);

  // Refused, and nothing written.
  struct Bad {
    const char* id;
    std::string doc;
    const char* says;
  };
  const Bad bad[] = {
      {"bad-zone", R"({"id":"bad-zone","body":1,"at":"2036-12-01 09:00","tz":"Mars/Olympus"})",
       "Mars/Olympus"},
      {"bad-type", R"({"id":"bad-type","body":1,"at":"2036-12-01 09:00","tz":1})", "tz must be"},
      {"no-at", R"({"id":"no-at","body":1,"delay":5,"tz":"Europe/Paris"})", "tz applies to at"},
      {"no-time", R"({"id":"no-time","body":1,"tz":"Europe/Paris"})", "tz applies to at"},
      {"bad-day", R"({"id":"bad-day","body":1,"at":"2036-02-30 09:00","tz":"Europe/Paris"})",
       "at:"},
  };
  for (const Bad& b : bad) {
    auto refused = http.post(jobs, b.doc);
    CHECK_MESSAGE(refused.status == 400, b.doc << " -> " << refused.body);
    CHECK_MESSAGE(refused.json()["error"].get<std::string>().find(b.says) != std::string::npos,
                  refused.body);
    CHECK(http.get(jobs + "/" + b.id).status == 404);
  }
  auto in_batch =
      http.post(jobs + "/batch",
                R"({"jobs":[{"id":"batch-bad","body":1,"at":"2026-12-01 09:00","tz":"X/Y"}]})");
  REQUIRE(in_batch.status == 200);
  CHECK(in_batch.json()["results"][0]["status"] == 400);
  CHECK(http.get(jobs + "/batch-bad").status == 404);
}

TEST_CASE("a topic's tz reads adds' at and the legacy fix_time; an add's own tz wins") {
  dq::test::TestRedis redis;
  dq::test::DqdProcess dqd(one_of_each(redis));
  REQUIRE(add_offline_topic(dqd, "ny", "America/New_York").is_ok());
  dq::Status refused = add_offline_topic(dqd, "bad", "Mars/Olympus");
  CHECK(refused.code() == dq::Code::kInvalid);
  CHECK(refused.message().rfind("tz: ", 0) == 0);
  dqd.start();
  dq::test::HttpClient http;
  std::string jobs = dqd.jobs_url("ny");
  const int year = dq::civil_from_wall_seconds(static_cast<int64_t>(std::time(nullptr))).year + 1;
  std::string july = std::to_string(year) + "-07-01 09:00";

  REQUIRE(http.post(jobs, R"({"id":"topic-zone","body":1,"at":")" + july + R"("})").status == 201);
  CHECK(http.get(jobs + "/topic-zone").json()["due_at_ms"] == utc(year, 7, 1, 13) * 1000);  // EDT
  REQUIRE(
      http.post(jobs, R"({"id":"own-zone","body":1,"at":")" + july + R"(","tz":"Europe/Paris"})")
          .status == 201);
  CHECK(http.get(jobs + "/own-zone").json()["due_at_ms"] == utc(year, 7, 1, 7) * 1000);  // CEST
  REQUIRE(
      http.post(jobs + "/batch", R"({"jobs":[{"id":"batched","body":1,"at":")" + july + R"("}]})")
          .status == 200);
  CHECK(http.get(jobs + "/batched").json()["due_at_ms"] == utc(year, 7, 1, 13) * 1000);
  // An update (PUT) reads its at the same way: its own tz, else the topic's.
  auto moved =
      http.request("PUT", jobs + "/own-zone", R"({"at":")" + july + R"(","tz":"Asia/Shanghai"})");
  REQUIRE_MESSAGE(moved.status == 200, moved.body);
  CHECK(http.get(jobs + "/own-zone").json()["due_at_ms"] == utc(year, 7, 1, 1) * 1000);  // CST
  REQUIRE(http.request("PUT", jobs + "/own-zone", R"({"at":")" + july + R"("})").status == 200);
  CHECK(http.get(jobs + "/own-zone").json()["due_at_ms"] == utc(year, 7, 1, 13) * 1000);
  CHECK(http.request("PUT", jobs + "/own-zone", R"({"at":")" + july + R"(","tz":"X/Y"})").status ==
        400);
  CHECK(http.get(jobs + "/own-zone").json()["due_at_ms"] == utc(year, 7, 1, 13) * 1000);
  // A delay has no zone; the topic's changes nothing.
  REQUIRE(http.post(jobs, R"({"id":"delayed","body":1,"delay":60})").status == 201);

  dq::test::LegacySocket socket(dqd.legacy_port());
  Json reply = socket.call(Json{
      {"cmd", "add"}, {"topic", "ny"}, {"id", "legacy"}, {"body", {{"a", 1}}}, {"fix_time", july}});
  REQUIRE_MESSAGE(reply.is_object(), reply.dump());
  CHECK_MESSAGE(reply.value("code", -1) == 1, reply.dump());
  CHECK(http.get(jobs + "/legacy").json()["due_at_ms"] == utc(year, 7, 1, 13) * 1000);
}

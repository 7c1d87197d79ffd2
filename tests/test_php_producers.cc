// Moving from the PHP delay queue, producers: what PHP-era producers send is accepted on both
// ports with the due time it means (every time form of common/core/time_text.h,
// numeric ids, a missing body), an impossible date is refused, and with
// Redis stopped for 3 s during a stream of legacy requests on one connection
// every reply still answers its own request (no reply comes late and shifts
// the ones after it).
#include <doctest/doctest.h>
#include <signal.h>

#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/shared_dqd.h"

using dq::Json;
using dq::test::HttpClient;
using dq::test::LegacySocket;
using dq::test::SharedDqd;

namespace {

SharedDqd& env() {
  static SharedDqd instance(dq::test::DqdOptions{}, {{"times"}, {"stream"}});
  return instance;
}

std::string strftime_text(time_t seconds, const char* format, bool utc) {
  struct tm parts {};
  if (utc) {
    gmtime_r(&seconds, &parts);
  } else {
    localtime_r(&seconds, &parts);
  }
  char text[64];
  strftime(text, sizeof text, format, &parts);
  return text;
}

int64_t local_midnight_ms(time_t seconds) {
  struct tm parts {};
  localtime_r(&seconds, &parts);
  parts.tm_hour = parts.tm_min = parts.tm_sec = 0;
  parts.tm_isdst = -1;
  return static_cast<int64_t>(mktime(&parts)) * 1000;
}

int64_t minute_start_ms(time_t seconds) {
  struct tm parts {};
  localtime_r(&seconds, &parts);
  parts.tm_sec = 0;
  parts.tm_isdst = -1;
  return static_cast<int64_t>(mktime(&parts)) * 1000;
}

struct TimeCase {
  std::string name;
  Json value;
  int64_t due_ms;  // expected; for relative forms: the offset from now
  bool relative = false;
};

Json http_job(const std::string& topic, const std::string& id) {
  auto got = dq::test::http_request("GET", env().dqd->jobs_url(topic) + "/" + id);
  return got.status == 200 ? got.json() : Json();
}

// Legacy request frame written as raw text (to send 1.50 and 1e3 as written).
std::string frame(const std::string& json) {
  char header[8];
  snprintf(header, sizeof header, "%04zu", json.size());
  return header + json;
}

}  // namespace

TEST_CASE("every time form is accepted on both ports with the due time it means") {
  time_t base = static_cast<time_t>(dq::now_ms() / 1000 + 3600);
  time_t tomorrow = base + 86400;
  std::vector<TimeCase> cases = {
      {"ymd-his", strftime_text(base, "%Y-%m-%d %H:%M:%S", false), base * 1000LL},
      {"ymd-hi", strftime_text(base, "%Y-%m-%d %H:%M", false), minute_start_ms(base)},
      {"ymd", strftime_text(tomorrow, "%Y-%m-%d", false), local_midnight_ms(tomorrow)},
      {"iso-offset", strftime_text(base + time_t{8} * 3600, "%Y-%m-%dT%H:%M:%S+08:00", true),
       base * 1000LL},
      {"iso-z", strftime_text(base, "%Y-%m-%dT%H:%M:%SZ", true), base * 1000LL},
      {"iso-local", strftime_text(base, "%Y-%m-%dT%H:%M:%S", false), base * 1000LL},
      {"unix-number", Json(static_cast<int64_t>(base)), base * 1000LL},
      {"unix-text", std::to_string(base), base * 1000LL},
      {"now", "", 0, true},
      {"rel-seconds", "+90 seconds", 90000, true},
      {"rel-minute", "+1 minute", 60000, true},
      {"rel-hours", "+2 hours", 7200000, true},
      {"rel-day", "+1 day", 86400000, true},
      {"rel-days", "+3 days", 3 * 86400000LL, true},
  };
  HttpClient http;
  LegacySocket socket(env().dqd->legacy_port());
  for (const TimeCase& c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.value.dump());
    int64_t before = dq::now_ms();
    auto added = http.post(env().dqd->jobs_url("times"),
                           Json{{"id", "h-" + c.name}, {"body", 1}, {"at", c.value}}.dump());
    REQUIRE(added.status == 201);
    Json reply = socket.call(Json{{"cmd", "add"},
                                  {"topic", "times"},
                                  {"id", "l-" + c.name},
                                  {"body", 1},
                                  {"fix_time", c.value}});
    REQUIRE(reply["code"] == 1);
    int64_t after = dq::now_ms();
    for (const char* port : {"h-", "l-"}) {
      Json job = http_job("times", port + c.name);
      REQUIRE(job.is_object());
      int64_t due = job["due_at_ms"].get<int64_t>();
      if (c.relative) {
        CHECK(due >= before + c.due_ms - 1000);  // Redis's clock, same host
        CHECK(due <= after + c.due_ms + 1000);
      } else {
        CHECK(due == c.due_ms);
      }
    }
  }
}

TEST_CASE("an impossible date is refused on both ports and nothing is stored") {
  HttpClient http;
  LegacySocket socket(env().dqd->legacy_port());
  for (const char* bad : {"2026-02-30 10:00:00", "2026-03-01 25:00", "2026-04-31", "tomorrow"}) {
    CAPTURE(bad);
    auto added = http.post(env().dqd->jobs_url("times"),
                           Json{{"id", "bad"}, {"body", 1}, {"at", bad}}.dump());
    CHECK(added.status == 400);
    CHECK(added.json()["error"].get<std::string>().find(bad) != std::string::npos);
    Json reply = socket.call(
        Json{{"cmd", "add"}, {"topic", "times"}, {"id", "bad"}, {"body", 1}, {"fix_time", bad}});
    CHECK(reply["code"] == 0);
    CHECK(reply["msg"].get<std::string>().find(bad) != std::string::npos);
    CHECK(http_job("times", "bad").is_null());
  }
}

TEST_CASE("numeric ids are their PHP text and a missing body is null, on both ports") {
  LegacySocket socket(env().dqd->legacy_port());
  struct IdCase {
    std::string written;
    std::string id;
  };
  for (const IdCase& c : std::vector<IdCase>{
           {"10", "10"}, {"1.5", "1.5"}, {"2.50", "2.5"}, {"1e3", "1000"}, {"7.0", "7"}}) {
    CAPTURE(c.written);
    socket.send_raw(frame(R"({"cmd":"add","topic":"times","id":)" + c.written +
                          R"(,"body":{"n":1},"fix_time":"+1 hours"})"));
    CHECK(socket.read_reply()["code"] == 1);
    CHECK(http_job("times", c.id).is_object());
    Json got = socket.call(Json{{"cmd", "get"}, {"topic", "times"}, {"id", c.id}});
    CHECK(got["code"] == 1);
  }
  HttpClient http;
  auto added = http.post(env().dqd->jobs_url("times"), R"({"id":11,"body":1,"delay":60})");
  CHECK(added.status == 201);
  CHECK(added.json()["id"] == "11");
  // The HTTP API keeps an integer id as written and refuses other numbers
  // (the PHP rule is the legacy port's alone).
  added = http.post(env().dqd->jobs_url("times"), R"({"id":3.50,"body":1,"delay":60})");
  CHECK(added.status == 400);
  CHECK(http.get(env().dqd->jobs_url("times") + "/3.5").status == 404);

  // No body: stored as null; get answers with the PHP queue's fields only.
  Json reply = socket.call(
      Json{{"cmd", "add"}, {"topic", "times"}, {"id", "no-body"}, {"fix_time", "+1 hours"}});
  CHECK(reply["code"] == 1);
  Json job = http_job("times", "no-body");
  REQUIRE(job.is_object());
  CHECK(job["body"].is_null());
  Json got = socket.call(Json{{"cmd", "get"}, {"topic", "times"}, {"id", "no-body"}});
  CHECK(got["code"] == 1);
  CHECK(got["data"]["notify_time"] ==
        strftime_text(job["due_at_ms"].get<int64_t>() / 1000, "%Y-%m-%d %H:%M:%S", false));
  CHECK(got["data"]["dq_set_time"] ==
        strftime_text(job["created_at_ms"].get<int64_t>() / 1000, "%Y-%m-%d %H:%M:%S", false));
}

TEST_CASE("with Redis stopped for 3 s, every legacy reply on one connection matches its request") {
  LegacySocket socket(env().dqd->legacy_port());
  pid_t redis = env().redis.pid();
  struct Resume {
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{redis};
  int64_t start = dq::now_ms();
  bool stopped = false, resumed = false;
  int timeouts = 0, answered = 0;
  std::map<std::string, int> reasons;  // of code 0 replies
  for (int i = 0; dq::now_ms() - start < 6000; ++i) {
    int64_t elapsed = dq::now_ms() - start;
    if (!stopped && elapsed > 1000) {
      REQUIRE(kill(redis, SIGSTOP) == 0);
      stopped = true;
    }
    if (stopped && !resumed && elapsed > 4000) {
      REQUIRE(kill(redis, SIGCONT) == 0);
      resumed = true;
    }
    std::string id = "s-" + std::to_string(i);
    // As the PHP client: send, then read with its fixed 1 s timeout.
    socket.send_json(Json{{"cmd", "add"},
                          {"topic", "stream"},
                          {"id", id},
                          {"body", {{"n", i}}},
                          {"fix_time", "+1 hours"}});
    Json added = socket.read_reply(1000);
    REQUIRE_MESSAGE(added.is_object(), "no reply to add " << id << " within 1 s");
    // Success or a refusal (a timeout, or the shard already known down): data is [] either way.
    CHECK(added["data"] == Json::array());
    if (added["code"] == 0) {
      ++reasons[added["msg"].get<std::string>()];
    }
    socket.send_json(Json{{"cmd", "get"}, {"topic", "stream"}, {"id", id}});
    Json got = socket.read_reply(1000);
    REQUIRE_MESSAGE(got.is_object(), "no reply to get " << id << " within 1 s");
    if (got["code"] == 1) {
      ++answered;
      CHECK_MESSAGE(got["data"]["n"] == i, "get " << id << " answered " << got.dump());
    } else {
      ++timeouts;
      CHECK(got["data"] == Json::array());
      ++reasons[got["msg"].get<std::string>()];  // a failure never carries another job's data
    }
  }
  MESSAGE(answered, " gets answered, ", timeouts, " not (Redis stopped)");
  for (const auto& reason : reasons) {
    MESSAGE(reason.second, " x ", reason.first);
  }
  // Redis hung: the requests already sent to it are answered at the deadline.
  CHECK(reasons["timeout, outcome unknown"] > 0);
  CHECK(resumed);
  CHECK(timeouts > 0);
  CHECK(answered > 0);
  // After Redis is back, the connection answers in step again.
  Json last = socket.call(Json{{"cmd", "get"}, {"topic", "stream"}, {"id", "s-0"}});
  CHECK(last["code"] == 1);
  CHECK(last["data"]["n"] == 0);
}

// Quiet hours end to end: a topic's delivery_window with a real dqd on a
// real redis-server and a real callback server. A job due while the window
// is closed is held (delayed, attempts unchanged, GET says why) and
// delivered after the opening, at most one per 1/max_rate; a job ready at
// the closing is not reserved until it opens. docs/delivery.md, "Quiet
// hours".
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"

using namespace dq;
using namespace dq::test;

namespace {

constexpr int64_t kMinuteMs = 60000;

// "HH:MM" of an instant, UTC.
std::string utc_clock(int64_t ms) {
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm parts {};
  gmtime_r(&seconds, &parts);
  char text[8];
  std::snprintf(text, sizeof text, "%02d:%02d", parts.tm_hour, parts.tm_min);
  return text;
}

// A window that opens at `opens_ms` (a whole minute) for `minutes`, every
// day, in UTC: closed from its end until then.
std::string window_from(int64_t opens_ms, int minutes) {
  std::string end = utc_clock(opens_ms + minutes * kMinuteMs);
  return utc_clock(opens_ms) + "-" + (end == "00:00" ? "24:00" : end) + " UTC";
}

// The first whole minute at least `lead_ms` from now: the test's window
// opens there, so the test waits up to a minute more than lead_ms.
int64_t next_minute_after(int64_t lead_ms) {
  int64_t at = wall_ms() + lead_ms;
  return (at + kMinuteMs - 1) / kMinuteMs * kMinuteMs;
}

void add_window_topic(DqdProcess& dqd, const std::string& name, const std::string& url,
                      const std::string& window, int max_rate, bool online = true) {
  Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.circuit_breaker = false;
  topic.max_rate = max_rate;
  topic.delivery_window = window;
  topic.online = online;
  add_topic(dqd, topic);
}

// A sample of /metrics with these labels (-1 when absent).
double metric(HttpClient& http, const DqdProcess& dqd, const std::string& series) {
  std::string page = http.get(dqd.base_url() + "/metrics").body;
  size_t at = page.find("\n" + series + " ");
  if (at == std::string::npos) {
    return -1;
  }
  return std::stod(page.substr(at + series.size() + 2));
}

}  // namespace

TEST_CASE("a closed window holds due jobs with no attempt; the opening delivers them at max_rate") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  // 25 s leaves time to start dqd and add the jobs while the window is
  // still closed, on a loaded machine.
  const int64_t opens = next_minute_after(25000);
  const int rate = 5;  // one shard: held jobs 200 ms apart
  const int jobs = 20;
  add_window_topic(dqd, "quiet", callback.url("/quiet"), window_from(opens, 30), rate);
  dqd.start();
  HttpClient http;
  for (int i = 0; i < jobs; ++i) {
    HttpResult added =
        http.post(dqd.jobs_url("quiet"), job_doc("q" + std::to_string(i), Json{{"i", i}}, 0));
    REQUIRE(added.status == 201);
  }
  REQUIRE(wall_ms() < opens - 3000);  // else the machine is too slow for this test

  // Held: every job delayed again, due at the opening + k x 200 ms, no
  // attempt used, and GET says why.
  std::vector<int64_t> due;
  REQUIRE(wait_within(10000, [&] {
    due.clear();
    for (int i = 0; i < jobs; ++i) {
      Json job = get_job(http, dqd, "quiet", "q" + std::to_string(i));
      if (job["state"] != "delayed" || job["due_at_ms"].get<int64_t>() < opens) {
        return false;
      }
      due.push_back(job["due_at_ms"].get<int64_t>());
    }
    return true;
  }));
  CHECK(wall_ms() < opens);
  std::sort(due.begin(), due.end());
  for (int k = 0; k < jobs; ++k) {
    CAPTURE(k);
    CHECK(due[k] == opens + k * 1000 / rate);
  }
  Json held = get_job(http, dqd, "quiet", "q7");
  CHECK(held["attempts"] == 0);
  REQUIRE(held.contains("waiting"));
  CHECK(held["waiting"]["reason"] == "delivery_window");
  CHECK(held["waiting"]["since_ms"].is_null());
  CHECK(held["waiting"]["detail"].get<std::string>().find("is closed; it opens at") !=
        std::string::npos);
  CHECK(callback.count() == 0);
  CHECK(metric(http, dqd, "dq_topic_delivery_window_open{topic=\"quiet\"}") == 0);
  CHECK(metric(http, dqd, "dq_jobs_held_by_window_total{topic=\"quiet\"}") == jobs);

  // The opening: each job once, none before it, the k-th call no earlier
  // than its turn (a slow machine only makes a call later).
  int64_t deadline_ms = opens - wall_ms() + jobs * 1000 / rate + 30000;
  REQUIRE(wait_within(deadline_ms, [&] { return callback.count() >= jobs; }));
  sleep_ms(500);  // a second call of any job would come now
  std::vector<int64_t> arrivals;
  for (const auto& request : callback.requests()) {
    arrivals.push_back(request.arrived_ms);
    CHECK(request.header("x-dq-attempt") == "1");
  }
  std::sort(arrivals.begin(), arrivals.end());
  std::map<std::string, int> by_id = deliveries_by_id(callback);
  int twice = 0;
  for (const auto& [id, times] : by_id) {
    twice += times > 1;
  }
  int early = 0;
  for (size_t k = 0; k < arrivals.size(); ++k) {
    early += arrivals[k] < opens + static_cast<int64_t>(k) * 1000 / rate;
  }
  MESSAGE(jobs, " jobs held for the opening at ", opens, ": delivered ", by_id.size(), ", twice ",
          twice, ", early ", early, "; first call ", arrivals.front() - opens,
          " ms after the opening, last ", arrivals.back() - opens, " ms");
  CHECK(by_id.size() == static_cast<size_t>(jobs));  // none lost
  CHECK(twice == 0);
  CHECK(early == 0);
  CHECK(arrivals.back() - arrivals.front() >= (jobs - 1) * 1000 / rate - 50);
  CHECK(metric(http, dqd, "dq_topic_delivery_window_open{topic=\"quiet\"}") == 1);
}

TEST_CASE("jobs ready when the window closes wait, unreserved, and go when it opens") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  // Offline first, so the jobs become ready and stay so.
  add_window_topic(dqd, "evening", callback.url("/evening"), "", 0, /*online=*/false);
  dqd.start();
  HttpClient http;
  const int jobs = 5;
  for (int i = 0; i < jobs; ++i) {
    REQUIRE(http.post(dqd.jobs_url("evening"), job_doc("e" + std::to_string(i), Json{{"i", i}}, 0))
                .status == 201);
  }
  REQUIRE(wait_within(10000, [&] {
    for (int i = 0; i < jobs; ++i) {
      if (get_job(http, dqd, "evening", "e" + std::to_string(i))["state"] != "ready") {
        return false;
      }
    }
    return true;
  }));
  // Online, and a window that opens in an hour: closed now. Through the
  // topic API, which writes the shared registry every host reads.
  const std::string topic_url = dqd.base_url() + "/v1/topics/evening";
  Json closed{{"online", true}, {"delivery_window", window_from(next_minute_after(3600000), 60)}};
  // The topic written to SQLite before the start reaches the shared registry
  // the API edits a moment later on a loaded machine (404 until then).
  HttpResult edited;
  REQUIRE(wait_within(20000, [&] {
    edited = http.request("PATCH", topic_url, closed.dump());
    return edited.status == 200;
  }));
  REQUIRE(wait_within(10000, [&] {
    Json job = get_job(http, dqd, "evening", "e0");
    return job.contains("waiting") && job["waiting"]["reason"] == "delivery_window";
  }));
  sleep_ms(3000);  // the consumer saw the change (it looks every 200 ms): nothing is called
  CHECK(callback.count() == 0);
  for (int i = 0; i < jobs; ++i) {
    Json job = get_job(http, dqd, "evening", "e" + std::to_string(i));
    CHECK(job["state"] == "ready");
    CHECK(job["attempts"] == 0);
    CHECK(job["waiting"]["reason"] == "delivery_window");
  }
  // The window removed: every job once.
  edited = http.request("PATCH", topic_url, Json{{"delivery_window", ""}}.dump());
  REQUIRE_MESSAGE(edited.status == 200, edited.body);
  REQUIRE(wait_within(15000, [&] { return callback.count() >= jobs; }));
  sleep_ms(500);
  std::map<std::string, int> by_id = deliveries_by_id(callback);
  CHECK(by_id.size() == static_cast<size_t>(jobs));
  for (const auto& [id, times] : by_id) {
    CAPTURE(id);
    CHECK(times == 1);
  }
}

// A ready job held back by its topic's caps says so (GET's `waiting`):
// "max_in_flight" while the topic's calls open are at the cap,
// "max_rate" while its rate is spent. Real dqd, real redis-server, a
// real callback server; every job is counted at the end. docs/delivery.md,
// "Caps per topic".
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <string>

#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"

using namespace dq;
using namespace dq::test;

namespace {

void add_capped(DqdProcess& dqd, const std::string& name, const std::string& url, int max_in_flight,
                int max_rate) {
  Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.timeout_ms = 20000;
  topic.circuit_breaker = false;
  topic.max_in_flight = max_in_flight;
  topic.max_rate = max_rate;
  add_topic(dqd, topic);
}

// Every job of `ids` called exactly once.
void check_each_once(const CallbackServer& callback, const std::string& prefix, int jobs) {
  std::map<std::string, int> by_id = deliveries_by_id(callback);
  int delivered = 0;
  int twice = 0;
  for (const auto& [id, times] : by_id) {
    if (id.rfind(prefix, 0) == 0) {
      ++delivered;
      twice += times > 1;
    }
  }
  MESSAGE(prefix, ": ", jobs, " jobs, delivered ", delivered, ", twice ", twice, ", lost ",
          jobs - delivered);
  CHECK(delivered == jobs);
  CHECK(twice == 0);
}

}  // namespace

TEST_CASE("a ready job behind a hung call says max_in_flight; one behind a spent rate, max_rate") {
  // The first call of /hung hangs for 8 s; the calls after `release` answer
  // at once. (Declared before the server, which calls the responder.)
  std::atomic<bool> release{false};
  TestRedis redis;
  CallbackServer callback;
  callback.set_responder([&release](const RecordedRequest& request, size_t) {
    if (request.path == "/hung" && !release.load()) {
      return CallbackAnswer(200, 8000);
    }
    return CallbackAnswer(200);
  });
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  add_capped(dqd, "one-at-a-time", callback.url("/hung"), 1, 0);
  add_capped(dqd, "slow-rate", callback.url("/rated"), 0, 1);
  dqd.start();
  HttpClient http;

  // max_in_flight 1: the first call hangs, the second job stays ready.
  REQUIRE(http.post(dqd.jobs_url("one-at-a-time"), job_doc("a0", Json{{"i", 0}}, 0)).status == 201);
  REQUIRE(wait_within(10000, [&] { return callback.count() >= 1; }));
  REQUIRE(http.post(dqd.jobs_url("one-at-a-time"), job_doc("a1", Json{{"i", 1}}, 0)).status == 201);
  Json second;
  CHECK(wait_within(5000, [&] {
    second = get_job(http, dqd, "one-at-a-time", "a1");
    return second["state"] == "ready" && second.contains("waiting");
  }));
  CAPTURE(second.dump());
  CHECK(second["waiting"]["reason"] == "max_in_flight");
  CHECK(second["waiting"]["since_ms"].is_null());
  CHECK(second["waiting"]["detail"].get<std::string>().find("max_in_flight (1)") !=
        std::string::npos);
  CHECK(second["attempts"] == 0);
  release = true;

  // max_rate 1 (burst 1): a backlog of 10 takes ~9 s; a ready one waits on the rate.
  const int rated_jobs = 10;
  for (int i = 0; i < rated_jobs; ++i) {
    REQUIRE(
        http.post(dqd.jobs_url("slow-rate"), job_doc("r" + std::to_string(i), Json{{"i", i}}, 0))
            .status == 201);
  }
  Json waiting_one;
  CHECK(wait_within(10000, [&] {
    for (int i = 0; i < rated_jobs; ++i) {
      HttpResult answer = http.get(dqd.jobs_url("slow-rate") + "/r" + std::to_string(i));
      if (answer.status != 200) {
        continue;  // delivered already
      }
      Json job = answer.json();
      if (job["state"] == "ready" && job.contains("waiting")) {
        waiting_one = job;
        return true;
      }
    }
    return false;
  }));
  CAPTURE(waiting_one.dump());
  CHECK(waiting_one["waiting"]["reason"] == "max_rate");
  CHECK(waiting_one["waiting"]["detail"].get<std::string>().find("max_rate 1/s") !=
        std::string::npos);
  CHECK(waiting_one["attempts"] == 0);

  // Every job once, none lost.
  REQUIRE(wait_within(30000, [&] { return callback.count() >= 2 + rated_jobs; }));
  sleep_ms(500);
  check_each_once(callback, "a", 2);
  check_each_once(callback, "r", rated_jobs);
}

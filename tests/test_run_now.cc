// Run now: a delayed or retrying job becomes due at once, its attempts
// kept (run_now.lua through the store, and POST /v1/topics/{t}/jobs/{id}/run
// against a real dqd delivering to a real callback server).
#include <doctest/doctest.h>

#include "common/core/clock.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

TEST_CASE("run_now: delayed and retrying jobs are due at once; others are told apart") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "later", "{}", in_ms(3600000)).is_ok());
  REQUIRE(store->add("t", "sooner", "{}", in_ms(600000)).is_ok());
  int64_t before = redis_time_ms(redis);
  auto ran = store->run_now("t", "later");
  REQUIRE(ran.is_ok());
  CHECK(ran->moved);
  CHECK(ran->state == JobState::kDelayed);
  CHECK(ran->due_ms >= before);
  CHECK(ran->due_ms <= redis_time_ms(redis));
  CHECK(store->get("t", "later")->due_at_ms == ran->due_ms);
  check_consistent(redis);
  // The promote that follows takes it, and only it.
  auto promoted = store->promote(0, 100);
  REQUIRE(promoted.is_ok());
  CHECK(promoted->moved == 1);
  CHECK(store->get("t", "later")->state == JobState::kReady);
  CHECK(store->get("t", "sooner")->state == JobState::kDelayed);

  // Ready already: nothing moves.
  auto ready = store->run_now("t", "later");
  REQUIRE(ready.is_ok());
  CHECK_FALSE(ready->moved);
  CHECK(ready->state == JobState::kReady);

  // A retrying job keeps its attempts.
  ReservedJob job = reserve_one(*store, "t", 30000, "r1");
  auto failed = store->fail(0, "t", "later", job.lease, 3600000, 5, "HTTP 500");
  REQUIRE(failed.is_ok());
  REQUIRE(*failed == FailOutcome::kRescheduled);
  auto retrying = store->run_now("t", "later");
  REQUIRE(retrying.is_ok());
  CHECK(retrying->moved);
  CHECK(retrying->state == JobState::kRetrying);
  auto after = store->get("t", "later");
  REQUIRE(after.is_ok());
  CHECK(after->attempts == 1);
  CHECK(after->due_at_ms == retrying->due_ms);
  check_consistent(redis);

  // A dead letter is refused; no such job is 404.
  ReservedJob again = reserve_one(*store, "t", 30000, "r2");
  REQUIRE(*store->fail(0, "t", "later", again.lease, 1000, 1, "HTTP 500") == FailOutcome::kDead);
  CHECK(store->run_now("t", "later").status().code() == Code::kConflict);
  CHECK(store->run_now("t", "none").status().code() == Code::kNotFound);
  check_consistent(redis);
}

TEST_CASE("POST .../run delivers a job due in an hour within a second; its home down is 503") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  register_topic(dqd, "orders", callback.url());
  dqd.start();
  HttpClient http;
  REQUIRE(http.post(dqd.jobs_url("orders"), job_doc("hour", Json{{"n", 1}}, 3600)).status == 201);
  sleep_ms(300);  // the timer has gone to sleep until the job's hour
  int64_t asked = monotonic_ms();
  HttpResult ran = http.post(dqd.jobs_url("orders") + "/hour/run", "");
  REQUIRE(ran.status == 200);
  CHECK(ran.json()["moved"] == true);
  CHECK(ran.json()["state"] == "delayed");
  REQUIRE(callback.wait_for(1, 10000));
  int64_t took = monotonic_ms() - asked;
  MESSAGE("delivered " << took << " ms after the run");
  CHECK(took < 1000);
  CHECK(deliveries_by_id(callback)["hour"] == 1);

  // Nothing left: 404, and a missing topic or bad id are refused.
  wait_until(5000, [&] { return http.get(dqd.jobs_url("orders") + "/hour").status == 404; });
  CHECK(http.post(dqd.jobs_url("orders") + "/hour/run", "").status == 404);
  CHECK(http.post(dqd.jobs_url("ghost") + "/x/run", "").status == 404);

  // The job's home stopped: 503 naming it, nothing changed.
  REQUIRE(http.post(dqd.jobs_url("orders"), job_doc("later", 1, 3600)).status == 201);
  redis.stop();
  HttpResult down;
  wait_until(10000, [&] {
    down = http.post(dqd.jobs_url("orders") + "/later/run", "");
    return down.status == 503;
  });
  CHECK(down.status == 503);
  CHECK(down.json()["error"].get<std::string>().find("cannot run") != std::string::npos);
  redis.start();
  wait_until(10000, [&] { return http.get(dqd.jobs_url("orders") + "/later").status == 200; });
  auto job = http.get(dqd.jobs_url("orders") + "/later").json();
  CHECK(job["state"] == "delayed");
  CHECK(job["due_at_ms"].get<int64_t>() > wall_ms() + 3000000);
}

// End-to-end tests of the HTTP/JSON API: a real dqd (API servers only) over
// real redis-server shards, driven with libcurl as a producer would.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/core/clock.h"
#include "common/core/time_text.h"
#include "common/store/job_store.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/job_records.h"
#include "tests/support/redis_server.h"

using dq::Json;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::HttpResult;
using dq::test::TestRedis;

namespace {

DqdOptions one_shard(const TestRedis& redis) {
  DqdOptions options;
  options.shards = {redis.address()};
  return options;
}

Json job(const std::string& id, const Json& body, double delay) {
  return Json{{"id", id}, {"body", body}, {"delay", delay}};
}

}  // namespace

TEST_CASE("a job added over HTTP can be read back and deleted") {
  TestRedis redis;
  DqdProcess dqd(one_shard(redis));
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;

  int64_t before = dq::now_ms();
  auto added = http.post(dqd.jobs_url("orders"), job("order-1", Json{{"amount", 42}}, 600).dump());
  REQUIRE(added.status == 201);
  Json answer = added.json();
  CHECK(answer["topic"] == "orders");
  CHECK(answer["id"] == "order-1");
  int64_t due = answer["due_at_ms"].get<int64_t>();
  CHECK(due >= before + 600000);
  CHECK(due <= dq::now_ms() + 600000);

  auto got = http.get(dqd.jobs_url("orders") + "/order-1");
  REQUIRE(got.status == 200);
  Json read = got.json();
  CHECK(read["body"] == Json{{"amount", 42}});
  CHECK(read["state"] == "delayed");
  CHECK(read["attempts"] == 0);
  CHECK(read["due_at_ms"] == due);
  CHECK(read["created_at_ms"].get<int64_t>() >= before);
  CHECK(got.content_type == "application/json");

  CHECK(http.del(dqd.jobs_url("orders") + "/order-1").status == 204);
  auto gone = http.get(dqd.jobs_url("orders") + "/order-1");
  CHECK(gone.status == 404);
  CHECK(gone.json()["error"].get<std::string>().find("not found") != std::string::npos);
  CHECK(http.del(dqd.jobs_url("orders") + "/order-1").status == 404);
}

TEST_CASE("fixed times, default delay and batch add") {
  TestRedis redis;
  DqdProcess dqd(one_shard(redis));
  dqd.add_topic("remind", "http://127.0.0.1:9/x", int64_t{3} * 24 * 3600);
  dqd.start();
  HttpClient http;

  int64_t now = dq::now_ms();
  auto plain = http.post(dqd.jobs_url("remind"), Json{{"id", "m-1"}, {"body", "hi"}}.dump());
  REQUIRE(plain.status == 201);
  int64_t default_due = plain.json()["due_at_ms"].get<int64_t>();
  CHECK(default_due >= now + 3LL * 24 * 3600 * 1000);
  CHECK(default_due <= dq::now_ms() + 3LL * 24 * 3600 * 1000);

  int64_t at_seconds = now / 1000 + 3600;
  auto at_number = http.post(dqd.jobs_url("remind"),
                             Json{{"id", "m-2"}, {"body", 1}, {"at", at_seconds}}.dump());
  REQUIRE(at_number.status == 201);
  CHECK(at_number.json()["due_at_ms"] == at_seconds * 1000);

  auto at_text =
      http.post(dqd.jobs_url("remind"),
                Json{{"id", "m-3"}, {"body", nullptr}, {"at", "2030-12-31 23:59:59"}}.dump());
  REQUIRE(at_text.status == 201);
  CHECK(at_text.json()["due_at_ms"] == dq::parse_time_text("2030-12-31 23:59:59")->ms);

  Json batch{{"jobs", Json::array({job("b-1", 1, 10), job("b-2", 2, 10), job("m-1", 3, 10),
                                   Json{{"id", "bad\x01id"}, {"body", 4}}})}};
  auto batched = http.post(dqd.jobs_url("remind") + "/batch", batch.dump());
  REQUIRE(batched.status == 200);
  Json results = batched.json()["results"];
  REQUIRE(results.size() == 4);
  CHECK(results[0]["status"] == 201);
  CHECK(results[1]["status"] == 201);
  CHECK(results[2]["status"] == 409);
  CHECK(results[3]["status"] == 400);
  CHECK(results[3]["error"].get<std::string>().find("not valid") != std::string::npos);
  CHECK(http.get(dqd.jobs_url("remind") + "/b-2").status == 200);
}

TEST_CASE("every bad request gets its status and a JSON reason, and Redis is unchanged") {
  TestRedis redis;
  DqdProcess dqd(DqdOptions{one_shard(redis).shards,
                            1,
                            0,
                            0,
                            64,
                            300,
                            200,
                            5000,
                            true,
                            false,
                            "[server]\nmax_body_bytes = 1024\n",
                            {}});
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  REQUIRE(http.post(dqd.jobs_url("orders"), job("kept", Json{{"v", 1}}, 60).dump()).status == 201);
  std::string before = redis.dump_all();

  struct Case {
    const char* name;
    std::string method;
    std::string url;
    std::string body;
    long status;
    const char* reason;
  };
  std::string orders = dqd.jobs_url("orders");
  std::vector<Case> cases = {
      {"malformed JSON", "POST", orders, "{\"id\": \"x\", ", 400, "not valid JSON"},
      {"empty body", "POST", orders, "", 400, "empty"},
      {"not an object", "POST", orders, "[1,2]", 400, "JSON object"},
      {"missing id", "POST", orders, Json{{"body", 1}}.dump(), 400, "id is required"},
      {"bad id", "POST", orders, job("a\tb", 1, 1).dump(), 400, "not valid"},
      {"too long id", "POST", orders, job(std::string(257, 'a'), 1, 1).dump(), 400, "not valid"},
      {"missing body", "POST", orders, Json{{"id", "x"}}.dump(), 400, "body is required"},
      {"negative delay", "POST", orders, job("x", 1, -5).dump(), 400, "negative"},
      {"delay not a number", "POST", orders,
       Json{{"id", "x"}, {"body", 1}, {"delay", "soon"}}.dump(), 400, "number"},
      {"bad time", "POST", orders,
       Json{{"id", "x"}, {"body", 1}, {"at", "2026-02-30 10:00:00"}}.dump(), 400, "valid date"},
      {"junk time", "POST", orders, Json{{"id", "x"}, {"body", 1}, {"at", "tomorrow"}}.dump(), 400,
       "Y-m-d H:i:s"},
      {"delay and at", "POST", orders,
       Json{{"id", "x"}, {"body", 1}, {"delay", 1}, {"at", 1}}.dump(), 400, "not both"},
      {"unknown field", "POST", orders, Json{{"id", "x"}, {"body", 1}, {"dealy", 1}}.dump(), 400,
       "unknown field"},
      {"unknown topic", "POST", dqd.jobs_url("nope"), job("x", 1, 1).dump(), 404, "unknown topic"},
      {"bad topic", "POST", dqd.jobs_url("a*b"), job("x", 1, 1).dump(), 400, "not valid"},
      {"duplicate id", "POST", orders, job("kept", Json{{"v", 2}}, 1).dump(), 409,
       "already pending"},
      {"too large", "POST", orders, job("big", std::string(2000, 'x'), 1).dump(), 413,
       "over the limit of 1024 ([server] max_body_bytes)"},
      {"request too large", "POST", orders, job("big", std::string(6000, 'x'), 1).dump(), 413,
       "([server] max_body_bytes)"},
      {"id a huge number", "POST", orders, R"({"id":1e400,"body":1})", 400,
       "send this one as a string (\"1e400\")"},
      {"id a fraction", "POST", orders, R"({"id":1.50,"body":1})", 400, "as a string"},
      {"unknown job", "GET", orders + "/missing", "", 404, "not found"},
      {"delete unknown job", "DELETE", orders + "/missing", "", 404, "not found"},
      {"get on unknown topic", "GET", dqd.jobs_url("nope") + "/kept", "", 404, "unknown topic"},
      {"wrong method", "PUT", orders, "{}", 405, "not allowed"},
      {"unknown route", "GET", dqd.base_url() + "/v2/whatever", "", 404, "no such route"},
      {"batch not a list", "POST", orders + "/batch", "{\"jobs\": 3}", 400, "expected"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto answer = http.request(c.method, c.url, c.body);
    CHECK(answer.status == c.status);
    Json error = answer.json();
    REQUIRE(error.is_object());
    REQUIRE(error.contains("error"));
    CHECK(error["error"].get<std::string>().find(c.reason) != std::string::npos);
  }
  // In a batch, the job's own answer is the refusal.
  auto batch = http.post(orders + "/batch", R"({"jobs":[{"id":-1e3,"body":1}]})");
  CHECK(batch.status == 200);
  CHECK(batch.json()["results"][0]["status"] == 400);
  CHECK(batch.json()["results"][0]["error"].get<std::string>().find("as a string") !=
        std::string::npos);
  CHECK(redis.dump_all() == before);
  // An integer id is kept as written, digits past 64 bits too.
  for (const std::string id : {"42", "-7", "123456789012345678901234567890"}) {
    CAPTURE(id);
    auto added = http.post(orders, "{\"id\":" + id + ",\"body\":1,\"delay\":60}");
    CHECK(added.status == 201);
    CHECK(added.json()["id"] == id);
    CHECK(http.get(orders + "/" + id).json()["id"] == id);
  }
  auto kept = http.get(orders + "/kept");
  REQUIRE(kept.status == 200);
  CHECK(kept.json()["body"] == Json{{"v", 1}});
}

TEST_CASE("no shard up: 503 with a reason, and the server keeps answering") {
  TestRedis redis;
  DqdProcess dqd(one_shard(redis));
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  redis.stop();
  dq::test::HttpResult answer;
  for (int i = 0; i < 40; ++i) {  // the server notices the drop within a few hundred ms
    answer = http.post(dqd.jobs_url("orders"), job("o-" + std::to_string(i), 1, 1).dump());
    if (answer.status == 503) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(answer.status == 503);
  CHECK(answer.json()["error"].get<std::string>().find("shard") != std::string::npos);
  auto health = http.get(dqd.base_url() + "/healthz");
  CHECK(health.status == 503);
  CHECK(health.json()["shards"][0]["up"] == false);

  redis.start();
  long status = 0;
  for (int i = 0; i < 50 && status != 201; ++i) {
    status = http.post(dqd.jobs_url("orders"), job("after", 1, 1).dump()).status;
    if (status != 201) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  CHECK(status == 201);
}

TEST_CASE("a refused AUTH makes the shard down (503 with the reason), not 500") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "requirepass", "s3cret"});
  DqdOptions options;
  options.shards = {redis.address() + ":wrong"};
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  dq::test::HttpResult health;
  for (int i = 0; i < 30; ++i) {  // the first connection is up until AUTH is answered
    health = http.get(dqd.base_url() + "/healthz");
    if (health.status == 503) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(health.status == 503);
  CHECK(health.json()["shards"][0]["up"] == false);
  CHECK(health.json()["shards"][0]["error"].get<std::string>().find("AUTH") != std::string::npos);
  for (int i = 0; i < 5; ++i) {  // also across the 500 ms reconnects
    auto answer = http.post(dqd.jobs_url("orders"), job("auth-" + std::to_string(i), 1, 1).dump());
    CHECK(answer.status == 503);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
}

TEST_CASE("a shard with a password: the right one is accepted and jobs go through") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "requirepass", "s3cret"});
  DqdOptions options;
  options.shards = {redis.address() + ":s3cret"};
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  long status = 0;
  for (int i = 0; i < 30 && status != 201; ++i) {  // up once AUTH is answered
    status = http.post(dqd.jobs_url("orders"), job("pw-1", 1, 60).dump()).status;
    if (status != 201) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  CHECK(status == 201);
  auto got = http.get(dqd.jobs_url("orders") + "/pw-1");
  CHECK(got.status == 200);
  CHECK(http.get(dqd.base_url() + "/healthz").json()["shards"][0]["up"] == true);
}

TEST_CASE(
    "two shards: jobs spread over both; one stopped, its ids answer 503 with Retry-After, "
    "the others go on") {
  TestRedis first;
  TestRedis second;
  DqdOptions options;
  options.shards = {first.address(), second.address()};
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  for (int i = 0; i < 200; ++i) {
    REQUIRE(
        http.post(dqd.jobs_url("orders"), job("a-" + std::to_string(i), i, 600).dump()).status ==
        201);
  }
  auto count = [](TestRedis& redis) { return dq::test::record_count(redis); };
  CHECK(count(first) > 50);
  CHECK(count(second) > 50);
  CHECK(count(first) + count(second) == 200);

  long first_before = count(first);
  second.stop();
  // Ids homed on the stopped shard are refused (503 naming it, Retry-After:
  // nothing written); the others are placed on the first.
  int ok = 0;
  std::vector<int> refused;
  for (int i = 0; i < 100; ++i) {
    auto answer = http.post(dqd.jobs_url("orders"), job("b-" + std::to_string(i), i, 600).dump());
    ok += answer.status == 201;
    if (answer.status == 503) {
      refused.push_back(i);
      CHECK(answer.header("retry-after") == "1");
      CHECK(answer.json()["error"].get<std::string>().find(second.address()) != std::string::npos);
      // Its get and delete: 503 naming it too, never a 404.
      auto got = http.get(dqd.jobs_url("orders") + "/b-" + std::to_string(i));
      CHECK(got.status == 503);
      CHECK(got.header("retry-after") == "1");
      CHECK(http.del(dqd.jobs_url("orders") + "/b-" + std::to_string(i)).status == 503);
    }
  }
  MESSAGE("adds with one shard stopped: 201 ", ok, ", 503 ", refused.size());
  CHECK(ok + static_cast<int>(refused.size()) == 100);
  CHECK(ok > 20);
  CHECK(refused.size() > 20);
  CHECK(count(first) == first_before + ok);
  auto health = http.get(dqd.base_url() + "/healthz");
  CHECK(health.status == 200);
  bool any_down = false;
  Json shards = health.json()["shards"];
  for (const auto& shard : shards) {
    any_down = any_down || !shard["up"].get<bool>();
  }
  CHECK(any_down);

  second.start();
  for (int i = 0; i < 50; ++i) {
    if (http.get(dqd.base_url() + "/healthz").json()["shards"][1]["up"] == true) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int i = 0; i < 200; ++i) {
    CAPTURE(i);
    CHECK(http.get(dqd.jobs_url("orders") + "/a-" + std::to_string(i)).status == 200);
  }
  // The refused adds, retried, are placed on their home; a second retry is
  // existing (200), another body a conflict.
  for (int i : refused) {
    HttpResult again;
    CHECK(dq::test::wait_until(10000, [&] {
      again = http.post(dqd.jobs_url("orders"), job("b-" + std::to_string(i), i, 600).dump());
      return again.status != 503;
    }));
    CHECK(again.status == 201);
  }
  for (int i = 0; i < 100; ++i) {
    auto same = http.post(dqd.jobs_url("orders"), job("b-" + std::to_string(i), i, 600).dump());
    CHECK(same.status == 200);
    CHECK(same.json()["existing"] == true);
    CHECK(http.post(dqd.jobs_url("orders"), job("b-" + std::to_string(i), i + 1000, 600).dump())
              .status == 409);
  }
  CHECK(count(first) + count(second) == 300);
}

TEST_CASE("healthz and metrics") {
  TestRedis redis;
  DqdProcess dqd(one_shard(redis));
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  auto health = http.get(dqd.base_url() + "/healthz");
  REQUIRE(health.status == 200);
  CHECK(health.json()["status"] == "ok");
  CHECK(health.json()["shards"][0]["name"] == redis.address());
  CHECK(health.json()["shards"][0]["up"] == true);
  REQUIRE(http.post(dqd.jobs_url("orders"), job("m", 1, 5).dump()).status == 201);
  auto metrics = http.get(dqd.base_url() + "/metrics");
  REQUIRE(metrics.status == 200);
  CHECK(metrics.body.find("dq_http_requests_total{route=\"add\",code=\"201\"} 1") !=
        std::string::npos);
  CHECK(metrics.body.find("dq_jobs_added_total{topic=\"orders\"} 1") != std::string::npos);
  CHECK(metrics.body.find("dq_jobs{topic=\"orders\",state=\"delayed\"} 1") != std::string::npos);
}

TEST_CASE("a topic registered while dqd runs takes jobs at once") {
  TestRedis redis;
  DqdProcess dqd(
      DqdOptions{one_shard(redis).shards, 1, 0, 0, 64, 300, 60000, 5000, true, false, "", {}});
  dqd.start();
  HttpClient http;
  CHECK(http.post(dqd.jobs_url("fresh"), job("f-1", 1, 5).dump()).status == 404);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  dqd.add_topic("fresh");
  // registry_refresh_ms is a minute here: only the reload on a miss can find it.
  CHECK(http.post(dqd.jobs_url("fresh"), job("f-1", 1, 5).dump()).status == 201);
}

TEST_CASE("stopped while Redis hangs: waiting requests are answered and the server exits cleanly") {
  TestRedis redis;
  DqdOptions options = one_shard(redis);
  // Shorter than the Redis command timeout below. The server answers what
  // waits at drain - 500 ms and exits; the 500 ms are for its exit, which
  // under ASan includes the leak check (with 1000 ms, so a margin of 200 ms,
  // a loaded CI machine once let the master's SIGKILL come first).
  options.drain_timeout_ms = 3000;
  // No shared registry: its sync (in dq-redis-checker) would wait out the
  // 10 s command timeout on the hung shard too, past the drain deadline.
  options.extra_ini = "[redis]\ncommand_timeout_ms = 10000\n[registry]\nshared = no\n";
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  REQUIRE(HttpClient().post(dqd.jobs_url("orders"), job("before", 1, 60).dump()).status == 201);

  kill(redis.pid(), SIGSTOP);  // Redis hangs: commands wait for answers
  dq::test::HttpResult answer;
  std::thread producer(
      [&] { answer = HttpClient().post(dqd.jobs_url("orders"), job("stuck", 1, 60).dump()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(dqd.stop(5000) == 0);
  producer.join();
  kill(redis.pid(), SIGCONT);

  // The request waiting on Redis is failed when the drain deadline passes; it
  // never gets a success it did not have.
  CHECK(answer.status != 201);
  std::string errors;
  for (const auto& entry : std::filesystem::directory_iterator(dqd.log_dir())) {
    if (entry.path().filename().string().rfind("err_", 0) != 0) {
      continue;
    }
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    errors += text.str();
  }
  CHECK(errors.find("dq-server_0 (pid") != std::string::npos);
  CHECK(errors.find("exited with status 0") != std::string::npos);
  CHECK(errors.find("killed by signal") == std::string::npos);
  if (errors.find("killed by signal") != std::string::npos) {
    MESSAGE(errors);
  }
}

// How many times Redis ran one of dq's functions (add.lua's, once loaded).
int64_t fcall_calls(TestRedis& redis) {
  auto reply = redis.command({"INFO", "commandstats"});
  std::string text(reply->str, reply->len);
  size_t at = text.find("cmdstat_fcall:calls=");
  if (at == std::string::npos) {
    return 0;
  }
  return std::stoll(text.substr(at + 20));
}

TEST_CASE("adds that arrive while an add call to their shard is in flight leave together") {
  TestRedis redis;
  DqdOptions options = one_shard(redis);
  // Script calls are counted: no shared registry, whose sync calls one
  // every 250 ms.
  options.extra_ini = "[redis]\ncommand_timeout_ms = 10000\n[registry]\nshared = no\n";
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  REQUIRE(HttpClient().post(dqd.jobs_url("orders"), job("warm", 1, 60).dump()).status == 201);
  int64_t before = fcall_calls(redis);

  // Redis hangs with the first add's call in flight; five more arrive one by
  // one, each in a loop turn of its own, then Redis answers.
  kill(redis.pid(), SIGSTOP);
  std::vector<int> statuses(6, 0);
  std::vector<std::thread> producers;
  for (int i = 0; i < 6; ++i) {
    producers.emplace_back([&, i] {
      statuses[i] = HttpClient()
                        .post(dqd.jobs_url("orders"), job("g-" + std::to_string(i), i, 60).dump())
                        .status;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(redis.pid(), SIGCONT);
  for (auto& producer : producers) {
    producer.join();
  }
  for (int i = 0; i < 6; ++i) {
    CHECK(statuses[i] == 201);
  }
  // One call for the first add, one for the five held behind it.
  CHECK(fcall_calls(redis) - before == 2);
  HttpClient http;
  for (int i = 0; i < 6; ++i) {
    auto got = http.get(dqd.jobs_url("orders") + "/g-" + std::to_string(i));
    REQUIRE(got.status == 200);
    CHECK(got.json()["body"] == i);
  }
}

TEST_CASE("dead letters over HTTP: list, requeue one or all, purge, and bad requests") {
  TestRedis redis;
  DqdProcess dqd(one_shard(redis));
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  dq::JobStore store({redis.shard()}, 1000, 1000);
  auto make_dead = [&](const std::string& id) {
    REQUIRE(store.add("orders", id, "{\"n\":1}", dq::DueTime{true, 0}).is_ok());
    REQUIRE(store.promote(0, 100).is_ok());
    auto reserved = store.reserve(0, "r-" + id, {{"orders", 60000, 10, 10, 1}}, 10, 1 << 20);
    REQUIRE(reserved.is_ok());
    REQUIRE(reserved->jobs.size() == 1);
    const dq::ReservedJob& job = reserved->jobs.front();
    auto failed = store.fail(0, "orders", job.job.id, job.lease, 1000, 1, "HTTP 500");
    REQUIRE(failed.is_ok());
    REQUIRE(*failed == dq::FailOutcome::kDead);
  };
  for (const char* id : {"d-1", "d-2", "d-3"}) {
    make_dead(id);
  }
  std::string dead = dqd.base_url() + "/v1/topics/orders/dead";

  auto listed = http.get(dead);
  REQUIRE(listed.status == 200);
  CHECK(listed.json()["total"] == 3);
  REQUIRE(listed.json()["jobs"].size() == 3);
  CHECK(listed.json()["jobs"][0]["state"] == "dead");
  CHECK(listed.json()["jobs"][0]["last_error"] == "HTTP 500");
  CHECK(http.get(dead + "?limit=2").json()["jobs"].size() == 2);
  CHECK(http.get(dead + "?offset=2").json()["jobs"].size() == 1);
  CHECK(http.get(dead + "?offset=abc").status == 400);
  CHECK(http.get(dead + "?limit=0").status == 400);
  CHECK(http.get(dead + "/nothing/here").status == 404);
  CHECK(http.get(dqd.base_url() + "/v1/topics/nope/dead").status == 404);

  auto one = http.post(dead + "/d-1/requeue", "");
  REQUIRE(one.status == 200);
  CHECK(one.json()["requeued"] == 1);
  auto again = http.get(dqd.jobs_url("orders") + "/d-1");
  CHECK(again.json()["state"] == "delayed");
  CHECK(again.json()["attempts"] == 0);
  CHECK(http.post(dead + "/d-1/requeue", "").status == 404);

  auto all = http.post(dead + "/requeue", "");
  REQUIRE(all.status == 200);
  CHECK(all.json()["requeued"] == 2);
  CHECK(http.get(dead).json()["total"] == 0);

  for (const char* id : {"d-1", "d-2", "d-3"}) {
    CHECK(http.del(dqd.jobs_url("orders") + "/" + id).status == 204);
  }
  make_dead("d-4");
  auto purged = http.request("DELETE", dead);
  REQUIRE(purged.status == 200);
  CHECK(purged.json()["purged"] == 1);
  CHECK(http.get(dqd.jobs_url("orders") + "/d-4").status == 404);
}

TEST_CASE("HEAD of a job, an at in the past, numbers too large for a double") {
  TestRedis redis;
  DqdProcess dqd(one_shard(redis));
  dqd.add_topic("edge");
  dqd.start();
  HttpClient http;
  REQUIRE(http.post(dqd.jobs_url("edge"), job("h", Json{{"n", 1}}, 600).dump()).status == 201);

  // HEAD is GET without the body.
  auto head = http.request("HEAD", dqd.jobs_url("edge") + "/h");
  CHECK(head.status == 200);
  CHECK(head.body.empty());
  CHECK(head.content_type == "application/json");
  CHECK(http.request("HEAD", dqd.jobs_url("edge") + "/nope").status == 404);

  // An at in the past is due at Redis's now, and that is the answer.
  const std::vector<Json> pasts = {Json(0), Json(1), Json("2001-01-01 00:00:00")};
  for (size_t i = 0; i < pasts.size(); ++i) {
    CAPTURE(pasts[i].dump());
    const std::string id = "past-" + std::to_string(i);
    int64_t before = dq::now_ms();
    auto added =
        http.post(dqd.jobs_url("edge"), Json{{"id", id}, {"body", 1}, {"at", pasts[i]}}.dump());
    REQUIRE(added.status == 201);
    int64_t due = added.json()["due_at_ms"].get<int64_t>();
    CHECK(due >= before - 1000);  // Redis's clock is this host's
    CHECK(due <= dq::now_ms() + 1000);
    CHECK(http.get(dqd.jobs_url("edge") + "/" + id).json()["due_at_ms"] == due);
  }

  // 1e400 is valid JSON: as a body (or in one) it is stored byte for byte.
  for (const std::string body : {"1e400", "[-1e400,1E+999,{\"a\":\"1e400\"}]"}) {
    CAPTURE(body);
    std::string id = "big-" + std::to_string(body.size());
    auto added = http.post(dqd.jobs_url("edge"),
                           "{\"id\":\"" + id + "\",\"body\":" + body + ",\"delay\":600}");
    CHECK_MESSAGE(added.status == 201, added.body);
    auto got = http.get(dqd.jobs_url("edge") + "/" + id);
    CHECK(got.status == 200);
    CHECK_MESSAGE(got.body.find("\"body\":" + body + "}") != std::string::npos, got.body);
  }
  auto batch = http.post(dqd.jobs_url("edge") + "/batch",
                         R"({"jobs":[{"id":"big-b","body":{"x":1e400},"delay":600}]})");
  CHECK(batch.status == 200);
  CHECK(batch.json()["results"][0]["status"] == 201);

  // As a delay or an at it is refused, with a reason, and changes nothing.
  std::string before = redis.dump_all();
  auto delay = http.post(dqd.jobs_url("edge"), R"({"id":"d","body":1,"delay":1e400})");
  CHECK(delay.status == 400);
  CHECK_MESSAGE(delay.json()["error"].get<std::string>().find("delay") != std::string::npos,
                delay.body);
  auto at = http.post(dqd.jobs_url("edge"), R"({"id":"a","body":1,"at":-1e400})");
  CHECK(at.status == 400);
  CHECK_MESSAGE(at.json()["error"].get<std::string>().find("at") != std::string::npos, at.body);
  CHECK(redis.dump_all() == before);
}

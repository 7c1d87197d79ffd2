// Circuit breaking per endpoint, end to end: a real redis-server, a real dqd
// (one timer, one consumer) and a real callback server with several paths
// on one host:port.
//   - /fail answers 500 to every call: its circuit opens, and /ok on the
//     same host keeps its jobs on time; a held /fail job's GET says
//     waiting.reason "circuit_open"; with max_retry_duration_s 8 every /fail
//     job is dead within ~20 s, its dead letter saying why.
//   - /busy answers 429 with Retry-After: 6: that endpoint pauses (a held job
//     says "paused_by_retry_after"), /ok does not.
//   - nothing listens on a port: the refused calls of one path count for the
//     receiver too, so another path on it is held without a call of its own.
//   - /metrics labels an endpoint's circuit; ordinary retries (no breaker)
//     end at max_retry_duration_s as well.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/redis/redis_sync.h"
#include "common/store/circuit_store.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"

using dq::Json;
using namespace dq::test;

namespace {

constexpr int kThreshold = 3;  // circuit_failures

dq::Topic make_topic(const std::string& name, const std::string& url) {
  dq::Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.timeout_ms = 2000;
  topic.max_attempts = 100;  // attempts never end them here: the duration does
  topic.retry_ms = "500";
  topic.circuit_failures = kThreshold;
  topic.circuit_open_ms = 60000;  // no probe within a case: the circuit stays open
  return topic;
}

// Adds ids prefix0..prefix(n-1), due from first_s to last_s from now; returns
// each id's due time (wall ms, as the server answered it).
std::map<std::string, int64_t> add_jobs(HttpClient& http, const DqdProcess& dqd,
                                        const std::string& topic, const std::string& prefix,
                                        int jobs, double first_s, double last_s) {
  Json list = Json::array();
  for (int i = 0; i < jobs; ++i) {
    double delay = first_s + (last_s - first_s) * i / std::max(1, jobs - 1);
    list.push_back(
        Json{{"id", prefix + std::to_string(i)}, {"body", Json{{"i", i}}}, {"delay", delay}});
  }
  auto answer = http.post(dqd.jobs_url(topic) + "/batch", Json{{"jobs", list}}.dump());
  REQUIRE(answer.status == 200);
  std::map<std::string, int64_t> due;
  Json results = answer.json()["results"];
  for (size_t i = 0; i < results.size(); ++i) {
    REQUIRE(results[i]["status"] == 201);
    due[prefix + std::to_string(i)] = results[i]["due_at_ms"].get<int64_t>();
  }
  return due;
}

Json topic_stats(HttpClient& http, const DqdProcess& dqd, const std::string& topic) {
  auto answer = http.get(dqd.base_url() + "/v1/topics/" + topic + "/stats");
  REQUIRE(answer.status == 200);
  return answer.json();
}

// The first ready job of a topic among ids (null when none is ready).
// Held jobs are ready: due, and not reserved.
Json ready_job(HttpClient& http, const DqdProcess& dqd, const std::string& topic,
               const std::map<std::string, int64_t>& ids) {
  for (const auto& entry : ids) {
    auto answer = http.get(dqd.jobs_url(topic) + "/" + entry.first);
    if (answer.status == 200 && answer.json()["state"] == "ready") {
      return answer.json();
    }
  }
  return nullptr;
}

std::string circuit_field(const TestRedis& redis, const std::string& name,
                          const std::string& field) {
  dq::RedisConnection connection(redis.shard(), 1000, 1000);
  auto reply = connection.command({"HGET", dq::keys::circuit(name), field});
  if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_STRING) {
    return "";
  }
  return std::string((*reply)->str, (*reply)->len);
}

// Arrival times per "path id" of the 2xx answers, and calls per path.
struct Receiver {
  std::mutex mutex;
  std::map<std::string, int64_t> arrived;
  std::map<std::string, int> calls;

  Responder responder() {
    return [this](const RecordedRequest& request, size_t) {
      std::lock_guard<std::mutex> lock(mutex);
      ++calls[request.path];
      if (request.path == "/fail") {
        return CallbackAnswer(500);
      }
      if (request.path == "/busy") {
        CallbackAnswer answer(429);
        answer.retry_after = "6";
        return answer;
      }
      arrived.emplace(request.path + " " + request.header("x-dq-id"), request.arrived_ms);
      return CallbackAnswer(200);
    };
  }
  int calls_to(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex);
    return calls[path];
  }
  // The largest lateness (arrival - due) of these jobs at path; -1 when one
  // has not arrived.
  int64_t worst_lateness(const std::string& path, const std::map<std::string, int64_t>& due) {
    std::lock_guard<std::mutex> lock(mutex);
    int64_t worst = 0;
    for (const auto& [id, due_ms] : due) {
      auto it = arrived.find(path + " " + id);
      if (it == arrived.end()) {
        return -1;
      }
      worst = std::max(worst, it->second - due_ms);
    }
    return worst;
  }
};

DqdOptions options_for(const TestRedis& redis) {
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 1;
  options.consumer_concurrency = 8;
  return options;
}

}  // namespace

TEST_CASE(
    "one host, two paths: /fail always 500 opens its own circuit, /ok stays on time, the held "
    "jobs die after max_retry_duration_s") {
  TestRedis redis;
  Receiver receiver;
  CallbackServer server;
  server.set_responder(receiver.responder());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  DqdProcess dqd(options_for(redis));
  dq::Topic failing = make_topic("fail", base + "/fail");
  failing.max_retry_duration_s = 8;
  add_topic(dqd, failing);
  add_topic(dqd, make_topic("ok", base + "/ok"));
  dqd.start();
  HttpClient http;

  int64_t started = wall_ms();
  auto fail_jobs = add_jobs(http, dqd, "fail", "f", 20, 0.2, 1.0);
  // The endpoint's circuit opens; the receiver's (the host answers) stays closed.
  const std::string endpoint = "127.0.0.1:" + std::to_string(server.port()) + "/fail";
  REQUIRE(wait_until(15000, [&] { return circuit_field(redis, endpoint, "phase") == "open"; }));
  CHECK(circuit_field(redis, "127.0.0.1:" + std::to_string(server.port()), "phase") != "open");
  // A held /fail job says why it waits (once one is due: the circuit may
  // open before the later ones are).
  Json held;
  wait_until(10000, [&] {
    held = ready_job(http, dqd, "fail", fail_jobs);
    return !held.is_null();
  });
  REQUIRE_MESSAGE(!held.is_null(), "no /fail job is ready (held) while its circuit is open");
  REQUIRE(held.contains("waiting"));
  CHECK(held["waiting"]["reason"] == "circuit_open");
  CHECK(held["waiting"]["since_ms"].get<int64_t>() > 0);
  CHECK(held["waiting"]["detail"].get<std::string>().find("/fail") != std::string::npos);

  // While it is open, /ok jobs come due and go on time.
  auto ok_jobs = add_jobs(http, dqd, "ok", "k", 20, 0.5, 4.0);
  bool all_ok = wait_until(30000, [&] { return receiver.worst_lateness("/ok", ok_jobs) >= 0; });
  int64_t lateness = receiver.worst_lateness("/ok", ok_jobs);
  CHECK(all_ok);
  CHECK(circuit_field(redis, endpoint, "phase") == "open");  // it was open all along

  // max_retry_duration_s 8: every /fail job is dead, none delivered.
  bool all_dead = wait_until(
      30000, [&] { return topic_stats(http, dqd, "fail")["now"]["dead"].get<int64_t>() == 20; });
  int64_t dead_after_ms = wall_ms() - started;
  auto dead = http.get(dqd.base_url() + "/v1/topics/fail/dead?limit=100");
  REQUIRE(dead.status == 200);
  Json dead_jobs = dead.json()["jobs"];
  int with_reason = 0;
  std::string example;
  for (const auto& job : dead_jobs) {
    std::string error = job.value("last_error", std::string());
    example = error;
    bool says_why = error.find("max_retry_duration_s") != std::string::npos ||
                    error.find("failing since") != std::string::npos;
    with_reason += says_why ? 1 : 0;
  }
  MESSAGE("/ok jobs while /fail's circuit was open: worst lateness ", lateness,
          " ms; all 20 /fail ", "jobs dead ", dead_after_ms,
          " ms after they were added (max_retry_duration_s 8); /fail ", "calls ",
          receiver.calls_to("/fail"), "; a dead letter says: ", example);
  CHECK(lateness >= 0);
  CHECK(lateness < 2000);
  CHECK(all_dead);
  CHECK(dead_after_ms < 25000);
  CHECK(dead_jobs.size() == 20);
  CHECK(with_reason == 20);
  CHECK(topic_stats(http, dqd, "ok")["now"]["dead"].get<int64_t>() == 0);
}

TEST_CASE("a Retry-After on one path pauses that endpoint, not another path of the host") {
  TestRedis redis;
  Receiver receiver;
  CallbackServer server;
  server.set_responder(receiver.responder());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  DqdProcess dqd(options_for(redis));
  add_topic(dqd, make_topic("busy", base + "/busy"));
  add_topic(dqd, make_topic("ok", base + "/ok"));
  dqd.start();
  HttpClient http;

  auto busy_jobs = add_jobs(http, dqd, "busy", "b", 30, 0.2, 0.4);
  const std::string endpoint = "127.0.0.1:" + std::to_string(server.port()) + "/busy";
  REQUIRE(
      wait_until(15000, [&] { return !circuit_field(redis, endpoint, "paused_until").empty(); }));
  int calls_at_pause = receiver.calls_to("/busy");
  auto ok_jobs = add_jobs(http, dqd, "ok", "k", 10, 0.3, 2.5);
  bool all_ok = wait_until(20000, [&] { return receiver.worst_lateness("/ok", ok_jobs) >= 0; });
  int64_t lateness = receiver.worst_lateness("/ok", ok_jobs);
  Json held;
  wait_until(3000, [&] {
    held = ready_job(http, dqd, "busy", busy_jobs);
    return !held.is_null();
  });
  int calls_in_pause = receiver.calls_to("/busy") - calls_at_pause;
  MESSAGE("/ok jobs while /busy was paused 6 s by Retry-After: worst lateness ", lateness,
          " ms; /busy calls during the pause ", calls_in_pause);
  CHECK(all_ok);
  CHECK(lateness >= 0);
  CHECK(lateness < 2000);
  // Calls in flight when the first 429 came may still answer; no new ones go.
  CHECK(calls_in_pause <= 8);
  REQUIRE_MESSAGE(!held.is_null(), "no /busy job is ready (held) during the pause");
  REQUIRE(held.contains("waiting"));
  CHECK(held["waiting"]["reason"] == "paused_by_retry_after");
  // A 429 with Retry-After is no failure: the endpoint's circuit stays closed.
  CHECK(circuit_field(redis, endpoint, "phase") != "open");
  // The jobs keep their attempts.
  CHECK(held["attempts"].get<int>() == 0);
}

TEST_CASE("refused connections count for the host: every path of it is held") {
  TestRedis redis;
  const int port = free_port();  // nothing listens on it
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  DqdProcess dqd(options_for(redis));
  add_topic(dqd, make_topic("a", base + "/a"));
  add_topic(dqd, make_topic("b", base + "/b"));
  dqd.start();
  HttpClient http;

  add_jobs(http, dqd, "a", "a", 10, 0.2, 0.5);
  const std::string host = "127.0.0.1:" + std::to_string(port);
  REQUIRE(wait_until(15000, [&] { return circuit_field(redis, host, "phase") == "open"; }));
  CHECK(circuit_field(redis, host + "/a", "phase") == "open");
  // /b never failed itself, but its receiver is dead: its jobs are held.
  auto b_jobs = add_jobs(http, dqd, "b", "b", 5, 0.2, 0.5);
  sleep_ms(3000);
  Json b_stats = topic_stats(http, dqd, "b");
  Json held;
  wait_until(5000, [&] {
    held = ready_job(http, dqd, "b", b_jobs);
    return !held.is_null();
  });
  MESSAGE("refused: /b attempts failed ", b_stats["total"]["failed"], ", /b endpoint circuit '",
          circuit_field(redis, host + "/b", "phase"), "'");
  CHECK(b_stats["total"]["failed"].get<int64_t>() == 0);
  REQUIRE(!held.is_null());
  CHECK(held["waiting"]["reason"] == "circuit_open");
  CHECK(held["waiting"]["detail"].get<std::string>().find(host) != std::string::npos);
}

TEST_CASE("/metrics labels an endpoint's circuit with its receiver and its endpoint") {
  TestRedis redis;
  dq::RedisConnection connection(redis.shard(), 1000, 1000);
  for (int i = 0; i < 3; ++i) {
    auto reply = connection.run(dq::circuit_report_call(
        {{"r.example:80/hooks", dq::CircuitVerdict::kFailed, 0}}, 3, 10000, "HTTP 500", "t", 5000));
    REQUIRE(reply.is_ok());
  }
  auto paused = connection.run(dq::circuit_report_call(
      {{"r.example:80/busy", dq::CircuitVerdict::kPause, 60000}}, 3, 10000, "HTTP 429", "t", 5000));
  REQUIRE(paused.is_ok());
  CHECK(circuit_field(redis, "r.example:80/busy", "phase").empty());  // a pause is no failure
  CHECK_FALSE(circuit_field(redis, "r.example:80/busy", "paused_until").empty());
  DqdOptions options;
  options.shards = {redis.address()};
  DqdProcess dqd(options);
  dqd.start();
  HttpClient http;
  auto page = http.get(dqd.base_url() + "/metrics");
  REQUIRE(page.status == 200);
  CHECK(page.body.find(
            "dq_circuit_state{receiver=\"r.example:80\",endpoint=\"r.example:80/hooks\"} 2") !=
        std::string::npos);
  CHECK(page.body.find(
            "dq_circuit_failures{receiver=\"r.example:80\",endpoint=\"r.example:80/hooks\"} 3") !=
        std::string::npos);
}

TEST_CASE("ordinary retries end at max_retry_duration_s too, with the reason") {
  TestRedis redis;
  Receiver receiver;
  CallbackServer server;
  server.set_responder(receiver.responder());
  DqdProcess dqd(options_for(redis));
  dq::Topic topic =
      make_topic("fail", "http://127.0.0.1:" + std::to_string(server.port()) + "/fail");
  topic.circuit_breaker = false;  // nothing holds them: they retry every 500 ms
  topic.max_retry_duration_s = 3;
  add_topic(dqd, topic);
  dqd.start();
  HttpClient http;
  int64_t started = wall_ms();
  add_jobs(http, dqd, "fail", "f", 5, 0.2, 0.4);
  bool all_dead = wait_until(
      20000, [&] { return topic_stats(http, dqd, "fail")["now"]["dead"].get<int64_t>() == 5; });
  int64_t dead_after_ms = wall_ms() - started;
  auto dead = http.get(dqd.base_url() + "/v1/topics/fail/dead?limit=100");
  REQUIRE(dead.status == 200);
  Json jobs = dead.json()["jobs"];
  int with_reason = 0;
  int64_t attempts = 0;
  for (const auto& job : jobs) {
    with_reason +=
        job.value("last_error", std::string()).find("max_retry_duration_s") != std::string::npos
            ? 1
            : 0;
    attempts += job["attempts"].get<int64_t>();
  }
  MESSAGE("5 jobs always 500, retried every 500 ms, max_retry_duration_s 3: dead ", dead_after_ms,
          " ms after added, ", attempts, " attempts in all");
  CHECK(all_dead);
  CHECK(dead_after_ms >= 3000);  // not before the duration
  CHECK(with_reason == 5);
  CHECK(attempts < 5 * 100);  // max_attempts 100 was not what ended them
}

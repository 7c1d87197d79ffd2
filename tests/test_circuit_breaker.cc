// Circuit breaking per endpoint and receiver, end to end: a real redis-server, two real
// dqd processes (two "hosts", two consumers each) on it, and a callback
// server that answers 503 or is stopped (connections refused) for an outage.
// Jobs come due all through the outage on a topic with max_attempts 3 and a
// 200 ms retry schedule: without the breaker each would be dead within a
// second of its due time (the control topic on the same receiver, breaker
// off, shows it). With it: no job dies, the failed attempts stay within the
// few before the circuit opened and the probes, every job is delivered once
// after the receiver recovers, and the circuit's opening and closing each
// queue exactly one alert across both hosts.
//
// DQ_CIRCUIT_OUTAGE_MS sets the outage (default 20000; docs/RELIABILITY.md
// has the numbers of a 60 s run).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/alerts/alert_outbox.h"
#include "common/core/json.h"
#include "common/core/shard.h"
#include "common/store/job.h"
#include "common/store/state_shard.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"

using dq::Json;
using namespace dq::test;

namespace {

constexpr int kJobs = 30;         // on the topic with the breaker
constexpr int kControlJobs = 10;  // on the topic without it
constexpr int kThreshold = 3;     // circuit_failures
constexpr int kOpenMs = 2000;     // circuit_open_ms
constexpr int kMaxAttempts = 3;

int outage_ms() {
  const char* text = std::getenv("DQ_CIRCUIT_OUTAGE_MS");
  return text != nullptr && std::atoi(text) > 0 ? std::atoi(text) : 20000;
}

// What the receiver saw, kept outside the server (which is stopped and
// started again in the refused case).
struct Receiver {
  std::mutex mutex;
  std::atomic<bool> failing{false};
  std::map<std::string, int> answered_ok;  // "/path id" -> 2xx answers
  int failed_answers = 0;

  dq::test::Responder responder() {
    return [this](const RecordedRequest& request, size_t) {
      CallbackAnswer answer;
      std::lock_guard<std::mutex> lock(mutex);
      if (failing.load()) {
        answer.status = 503;
        ++failed_answers;
      } else {
        ++answered_ok[request.path + " " + request.header("x-dq-id")];
      }
      return answer;
    };
  }
  int ok_count(const std::string& path, int jobs) {
    std::lock_guard<std::mutex> lock(mutex);
    int delivered = 0;
    for (int i = 0; i < jobs; ++i) {
      delivered += answered_ok.count(path + " j" + std::to_string(i)) > 0 ? 1 : 0;
    }
    return delivered;
  }
  int duplicates() {
    std::lock_guard<std::mutex> lock(mutex);
    int twice = 0;
    for (const auto& entry : answered_ok) {
      twice += entry.second > 1 ? 1 : 0;
    }
    return twice;
  }
};

void register_topics(DqdProcess& dqd, const std::string& url_base) {
  for (bool breaker : {true, false}) {
    dq::Topic topic;
    topic.name = breaker ? "cb" : "nocb";
    topic.callback_url = url_base + (breaker ? "/cb" : "/nocb");
    topic.timeout_ms = 1000;
    topic.max_attempts = kMaxAttempts;
    topic.retry_ms = "200,200,200";
    topic.circuit_breaker = breaker;
    topic.circuit_failures = kThreshold;
    topic.circuit_open_ms = kOpenMs;
    dq::Status added = dqd.registry().add_topic(topic);
    REQUIRE_MESSAGE(added.is_ok(), added.message());
  }
}

Json topic_stats(HttpClient& http, const DqdProcess& dqd, const std::string& topic) {
  auto answer = http.get(dqd.base_url() + "/v1/topics/" + topic + "/stats");
  REQUIRE(answer.status == 200);
  return answer.json();
}

void add_jobs(HttpClient& http, const DqdProcess& dqd, const std::string& topic, int jobs,
              double first_s, double last_s) {
  Json list = Json::array();
  for (int i = 0; i < jobs; ++i) {
    double delay = first_s + (last_s - first_s) * i / std::max(1, jobs - 1);
    list.push_back(
        Json{{"id", "j" + std::to_string(i)}, {"body", Json{{"i", i}}}, {"delay", delay}});
  }
  auto answer = http.post(dqd.jobs_url(topic) + "/batch", Json{{"jobs", list}}.dump());
  REQUIRE(answer.status == 200);
}

// circuit_open and circuit_closed events queued in both hosts' outboxes.
std::map<std::string, int> circuit_alerts(const std::vector<DqdProcess*>& hosts) {
  std::map<std::string, int> kinds;
  for (DqdProcess* dqd : hosts) {
    auto outbox = dq::AlertOutbox::open(dqd->sqlite_path());
    REQUIRE(outbox.is_ok());
    auto recent = (*outbox)->recent(1000);
    REQUIRE(recent.is_ok());
    for (const auto& event : *recent) {
      if (event.kind.rfind("circuit_", 0) == 0) {
        ++kinds[event.kind];
      }
    }
  }
  return kinds;
}

enum class Outage { kAnswers503, kRefused };

void run_outage(Outage kind) {
  const int outage = outage_ms();
  TestRedis redis;
  Receiver receiver;
  auto server = std::make_unique<CallbackServer>();
  const int port = server->port();
  const std::string url_base = "http://127.0.0.1:" + std::to_string(port);
  server->set_responder(receiver.responder());

  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 2;
  options.consumer_concurrency = 4;
  DqdProcess host_a(options);
  DqdProcess host_b(options);
  register_topics(host_a, url_base);
  register_topics(host_b, url_base);
  host_a.start();
  host_b.start();
  HttpClient http;

  // The outage begins; jobs come due all through it.
  int64_t outage_start = wall_ms();
  if (kind == Outage::kAnswers503) {
    receiver.failing = true;
  } else {
    server.reset();  // nothing listens: connections are refused
  }
  double outage_s = outage / 1000.0;
  add_jobs(http, host_a, "cb", kJobs, 0.5, outage_s - 1.0);
  add_jobs(http, host_b, "nocb", kControlJobs, 0.5, outage_s / 2);

  // Control: on the same receiver without the breaker, every job dies.
  CHECK(wait_until(outage, [&] {
    return topic_stats(http, host_a, "nocb")["now"]["dead"].get<int64_t>() == kControlJobs;
  }));
  REQUIRE(wait_until(outage + 5000, [&] { return wall_ms() >= outage_start + outage; }));
  Json during = topic_stats(http, host_a, "cb");
  int64_t failed_in_outage = during["total"]["failed"].get<int64_t>();
  int64_t dead_in_outage = during["now"]["dead"].get<int64_t>();

  // It recovers.
  int64_t recovered_at = wall_ms();
  if (kind == Outage::kAnswers503) {
    receiver.failing = false;
  } else {
    server = std::make_unique<CallbackServer>("127.0.0.1", port);
    server->set_responder(receiver.responder());
  }
  bool all =
      wait_until(2 * outage + 60000, [&] { return receiver.ok_count("/cb", kJobs) == kJobs; });
  int64_t all_after_ms = wall_ms() - recovered_at;
  bool closed = wait_until(30000, [&] {
    return circuit_alerts({&host_a, &host_b})["circuit_closed"] >= 1;
  });
  sleep_ms(1500);  // a duplicate or a second alert would show up here
  Json after = topic_stats(http, host_b, "cb");
  auto alerts = circuit_alerts({&host_a, &host_b});

  MESSAGE(std::string(kind == Outage::kAnswers503 ? "503" : "refused"), " for ", outage,
          " ms: ", kJobs, " jobs due during it; failed attempts during the outage ",
          failed_in_outage, " (without the breaker ", kJobs * kMaxAttempts, "), dead ",
          dead_in_outage, "; all delivered ", all_after_ms,
          " ms after recovery: ", receiver.ok_count("/cb", kJobs), " delivered, ",
          receiver.duplicates(), " twice; alerts open ", alerts["circuit_open"], ", closed ",
          alerts["circuit_closed"], "; 503 answers seen ", receiver.failed_answers);
  CHECK(all);
  CHECK(closed);
  CHECK(dead_in_outage == 0);
  CHECK(after["now"]["dead"].get<int64_t>() == 0);
  CHECK(receiver.ok_count("/cb", kJobs) == kJobs);
  CHECK(receiver.duplicates() == 0);
  // Attempts stay within the probes: the failures before it opened, the
  // calls in flight then (2 hosts x 2 consumers x 4), one probe per wait
  // (the waits double, so fewer), and one more.
  int64_t bound = kThreshold + 16 + outage / kOpenMs + 1;
  CHECK(failed_in_outage <= bound);
  CHECK(failed_in_outage >= kThreshold);
  // Refused calls count for the endpoint and for the host (docs/delivery.md,
  // "Circuit breaking per endpoint and receiver"): each circuit alerts once.
  int circuits = kind == Outage::kRefused ? 2 : 1;
  CHECK(alerts["circuit_open"] == circuits);
  CHECK(alerts["circuit_closed"] == circuits);
}

}  // namespace

TEST_CASE("a receiver answering 503 through an outage: no job dies, each is delivered once after") {
  run_outage(Outage::kAnswers503);
}

TEST_CASE(
    "a receiver refusing connections through an outage: no job dies, one alert each way per "
    "circuit") {
  run_outage(Outage::kRefused);
}

TEST_CASE(
    "the shard holding the receiver's circuit is down: each consumer breaks on its own, "
    "no job dies, no alert") {
  const int outage = 10000;
  TestRedis first;
  TestRedis second;
  Receiver receiver;
  CallbackServer server;
  server.set_responder(receiver.responder());
  const std::string url_base = "http://127.0.0.1:" + std::to_string(server.port());
  std::vector<dq::ShardAddress> shards = {first.shard(), second.shard()};
  size_t state = dq::state_shard(shards, "127.0.0.1:" + std::to_string(server.port()));
  size_t up = 1 - state;

  DqdOptions options;
  options.shards = {first.address(), second.address()};
  options.timers = 1;
  options.consumers = 2;
  options.consumer_concurrency = 4;
  DqdProcess dqd(options);
  register_topics(dqd, url_base);
  dqd.start();
  (state == 0 ? first : second).stop();

  // Ids whose home is the shard that is up (the others would be refused, 503).
  auto ids_on_up = [&](const std::string& topic, int count) {
    std::vector<std::string> ids;
    for (int i = 0; static_cast<int>(ids.size()) < count; ++i) {
      std::string id = "j" + std::to_string(i);
      if (dq::shard_order(shards, dq::job_key(topic, id)).front() == up) {
        ids.push_back(id);
      }
    }
    return ids;
  };
  std::vector<std::string> jobs = ids_on_up("cb", 20);
  std::vector<std::string> control = ids_on_up("nocb", 5);
  receiver.failing = true;
  int64_t outage_start = wall_ms();
  HttpClient http;
  auto add = [&](const std::string& topic, const std::vector<std::string>& ids, double last_s) {
    Json list = Json::array();
    for (size_t i = 0; i < ids.size(); ++i) {
      list.push_back(
          Json{{"id", ids[i]},
               {"body", Json::object()},
               {"delay", 0.5 + (last_s - 0.5) * i / std::max<size_t>(1, ids.size() - 1)}});
    }
    auto answer = http.post(dqd.jobs_url(topic) + "/batch", Json{{"jobs", list}}.dump());
    REQUIRE(answer.status == 200);
    Json results = answer.json()["results"];  // a copy: json() is a temporary
    for (const auto& result : results) {
      REQUIRE(result["status"] == 201);
    }
  };
  add("cb", jobs, outage / 1000.0 - 1.0);
  add("nocb", control, 3.0);
  CHECK(wait_until(
      outage, [&] { return topic_stats(http, dqd, "nocb")["now"]["dead"].get<int64_t>() == 5; }));
  REQUIRE(wait_until(outage + 5000, [&] { return wall_ms() >= outage_start + outage; }));
  int64_t failed_in_outage = topic_stats(http, dqd, "cb")["total"]["failed"].get<int64_t>();
  receiver.failing = false;
  int64_t recovered_at = wall_ms();
  auto delivered = [&] {
    std::lock_guard<std::mutex> lock(receiver.mutex);
    int count = 0;
    for (const auto& id : jobs) {
      count += receiver.answered_ok.count("/cb " + id) > 0 ? 1 : 0;
    }
    return count;
  };
  bool all = wait_until(60000, [&] { return delivered() == static_cast<int>(jobs.size()); });
  int64_t after_ms = wall_ms() - recovered_at;
  sleep_ms(1500);
  auto alerts = circuit_alerts({&dqd});
  MESSAGE("circuit state shard down, 503 for ", outage, " ms: ", jobs.size(),
          " jobs; failed attempts during the outage ", failed_in_outage, " (without a breaker ",
          jobs.size() * kMaxAttempts, "); delivered ", delivered(), " of them ", after_ms,
          " ms after recovery, ", receiver.duplicates(), " twice; circuit alerts ",
          alerts["circuit_open"] + alerts["circuit_closed"]);
  CHECK(all);
  CHECK(topic_stats(http, dqd, "cb")["now"]["dead"].get<int64_t>() == 0);
  CHECK(receiver.duplicates() == 0);
  CHECK(failed_in_outage < static_cast<int64_t>(jobs.size() * kMaxAttempts));
  CHECK(alerts["circuit_open"] == 0);  // a local copy sends none (docs/decisions.md)
  CHECK(alerts["circuit_closed"] == 0);
}

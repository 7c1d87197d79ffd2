// Delivery that protects the receiver, end to end: a 429/503 with
// Retry-After defers a job without using an attempt (max_deferrals times),
// dead_on statuses dead-letter at once, retry_jitter spreads jobs that failed
// together, and bad settings are refused by the admin API and dqctl.
// Real redis-server, real dqd, a real callback server that counts.
#include <doctest/doctest.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "tests/support/admin_client.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::Topic;
using namespace dq::test;

namespace {

struct World {
  TestRedis redis;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
  HttpClient http;

  explicit World(bool admin = false) {
    DqdOptions options;
    options.shards = {redis.address()};
    options.timers = 1;
    options.consumers = 1;
    options.admin = admin;
    if (admin) {
      options.extra_ini = "[admin]\nuser = admin\npassword_file = admin-password\n";
    }
    dqd = std::make_unique<DqdProcess>(options);
    if (admin) {
      std::ofstream(dqd->dir() + "/admin-password") << "correct horse battery\n";
    }
    dqd->start();
  }

  Topic topic(const std::string& name) {
    Topic topic;
    topic.name = name;
    topic.callback_url = callback.url("/" + name);
    topic.timeout_ms = 5000;
    // These cases count the receiver's own answers; with the circuit breaker
    // on, 20 failures at once would stop the topic's calls (its own test:
    // test_circuit_breaker.cc).
    topic.circuit_breaker = false;
    return topic;
  }
  void add(const Topic& topic) {
    auto added = dqd->registry().add_topic(topic);
    REQUIRE_MESSAGE(added.is_ok(), added.message());
    sleep_ms(600);  // the consumer's registry refresh (200 ms) picks it up
  }
  void add_job(const std::string& topic, const std::string& id, double delay_s = 0) {
    auto answer = http.post(dqd->jobs_url(topic), job_doc(id, Json{{"n", 1}}, delay_s));
    REQUIRE_MESSAGE(answer.status == 201, answer.body);
  }
  Json job(const std::string& topic, const std::string& id) {
    return http.get(dqd->jobs_url(topic) + "/" + id).json();
  }
  Json dead(const std::string& topic) {
    return http.get(dqd->base_url() + "/v1/topics/" + topic + "/dead").json();
  }
  size_t dead_count(const std::string& topic) {
    Json listed = dead(topic);
    return listed.is_object() && listed["jobs"].is_array() ? listed["jobs"].size() : 0;
  }
  std::vector<RecordedRequest> requests_to(const std::string& topic) {
    std::vector<RecordedRequest> out;
    for (auto& request : callback.requests()) {
      if (request.path == "/" + topic) out.push_back(request);
    }
    return out;
  }
};

int attempt_of(const RecordedRequest& request) { return std::stoi(request.header("x-dq-attempt")); }

std::string http_date(int64_t epoch_s) {
  time_t at = static_cast<time_t>(epoch_s);
  tm parts{};
  gmtime_r(&at, &parts);
  char text[64];
  strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &parts);
  return text;
}

}  // namespace

TEST_CASE("429 + Retry-After: 1 defers without an attempt, max_deferrals times, then fails") {
  World world;
  Topic topic = world.topic("busy");
  topic.max_deferrals = 2;
  topic.max_attempts = 2;
  topic.retry_ms = "500";
  world.add(topic);
  world.callback.set_responder([](const RecordedRequest&, size_t) {
    CallbackAnswer answer(429);
    answer.retry_after = "1";
    return answer;
  });
  world.add_job("busy", "j1");

  // The first answer defers: attempts back to 0, deferrals 1, and the error says so.
  REQUIRE(world.callback.wait_for(1, 10000));
  Json job;
  REQUIRE(wait_until(5000, [&] {
    job = world.job("busy", "j1");
    return job.is_object() && job.value("deferrals", 0) >= 1;
  }));
  CHECK(job["deferrals"] == 1);
  CHECK(job["last_error"].get<std::string>().find("HTTP 429") != std::string::npos);
  CHECK(job["last_error"].get<std::string>().find("deferral 1 of 2") != std::string::npos);

  // Two deferrals, then two ordinary attempts: dead after exactly 4 requests.
  REQUIRE(wait_until(30000, [&] { return world.dead_count("busy") == 1; }));
  sleep_ms(1500);  // nothing more comes
  auto requests = world.requests_to("busy");
  REQUIRE(requests.size() == 4);
  CHECK(attempt_of(requests[0]) == 1);
  CHECK(attempt_of(requests[1]) == 1);  // a deferral used no attempt
  CHECK(attempt_of(requests[2]) == 1);
  CHECK(attempt_of(requests[3]) == 2);  // the third 429 was an ordinary failed attempt
  for (int i : {1, 2}) {
    int64_t gap = requests[i].arrived_ms - requests[i - 1].arrived_ms;
    CAPTURE(i);
    CHECK(gap >= 990);   // not before Retry-After's second
    CHECK(gap < 10000);  // and not absurdly late
  }
  MESSAGE("deferral gaps ms: ", requests[1].arrived_ms - requests[0].arrived_ms, ", ",
          requests[2].arrived_ms - requests[1].arrived_ms);
  Json dead = world.dead("busy")["jobs"][0];
  CHECK(dead["id"] == "j1");
  CHECK(dead["attempts"] == 2);
  CHECK(dead["deferrals"] == 2);
  CHECK(dead["last_error"].get<std::string>().find("Retry-After not honoured") !=
        std::string::npos);
}

TEST_CASE("the deferral count survives a kill -9 of dqd: the limit still holds after a restart") {
  World world;
  Topic topic = world.topic("crash");
  topic.max_deferrals = 1;
  topic.max_attempts = 3;
  topic.retry_ms = "300";
  world.add(topic);
  world.callback.set_responder([](const RecordedRequest&, size_t) {
    CallbackAnswer answer(429);
    answer.retry_after = "2";
    return answer;
  });
  world.add_job("crash", "c1");
  REQUIRE(world.callback.wait_for(1, 10000));
  REQUIRE(wait_until(5000, [&] {
    Json job = world.job("crash", "c1");
    return job.is_object() && job.value("deferrals", 0) == 1;
  }));
  world.dqd->kill9();  // every dq process: the count is in Redis only
  world.dqd->start();
  REQUIRE(wait_until(30000, [&] { return world.dead_count("crash") == 1; }));
  sleep_ms(1000);
  auto requests = world.requests_to("crash");
  REQUIRE(requests.size() == 4);
  CHECK(attempt_of(requests[0]) == 1);
  CHECK(attempt_of(requests[1]) == 1);  // the one deferral
  CHECK(attempt_of(requests[2]) == 2);  // the limit held across the restart
  CHECK(attempt_of(requests[3]) == 3);
  CHECK(requests[1].arrived_ms - requests[0].arrived_ms >= 1990);
  Json dead = world.dead("crash")["jobs"][0];
  CHECK(dead["deferrals"] == 1);
  CHECK(dead["attempts"] == 3);
}

TEST_CASE("503 + Retry-After as an HTTP-date defers; a 429 without Retry-After is a failure") {
  World world;
  Topic dated = world.topic("dated");
  dated.retry_ms = "300";
  world.add(dated);
  Topic plain = world.topic("plain");
  plain.retry_ms = "300";
  world.add(plain);
  int64_t date_s = 0;
  world.callback.set_responder([&](const RecordedRequest& request, size_t) {
    if (request.path == "/dated" && date_s == 0) {
      date_s = wall_ms() / 1000 + 2;  // 1-2 s from now, in whole seconds
      CallbackAnswer answer(503);
      answer.retry_after = http_date(date_s);
      return answer;
    }
    if (request.path == "/plain" && request.header("x-dq-attempt") == "1") {
      return CallbackAnswer(429);
    }
    return CallbackAnswer(200);
  });
  world.add_job("dated", "d1");
  world.add_job("plain", "p1");
  REQUIRE(wait_until(20000, [&] {
    return world.requests_to("dated").size() >= 2 && world.requests_to("plain").size() >= 2;
  }));
  sleep_ms(1000);
  auto dated_requests = world.requests_to("dated");
  REQUIRE(dated_requests.size() == 2);
  CHECK(attempt_of(dated_requests[1]) == 1);                  // deferred: the same attempt again
  CHECK(dated_requests[1].arrived_ms >= date_s * 1000 - 10);  // not before the date
  CHECK(dated_requests[1].arrived_ms - dated_requests[0].arrived_ms < 10000);
  MESSAGE("HTTP-date deferral: ", dated_requests[1].arrived_ms - dated_requests[0].arrived_ms,
          " ms after the 503");
  auto plain_requests = world.requests_to("plain");
  REQUIRE(plain_requests.size() == 2);
  CHECK(attempt_of(plain_requests[1]) == 2);  // an ordinary failed attempt
}

TEST_CASE("a dead_on status dead-letters the job at once, with that answer as its error") {
  World world;
  Topic topic = world.topic("strict");
  topic.dead_on = "400,410,422";
  topic.max_attempts = 5;
  topic.retry_ms = "300";
  world.add(topic);
  world.callback.set_responder([](const RecordedRequest&, size_t) {
    return CallbackAnswer(410, 0, "{\"error\":\"gone\"}");
  });
  world.add_job("strict", "s1");
  REQUIRE(wait_until(10000, [&] { return world.dead_count("strict") == 1; }));
  Json dead = world.dead("strict");
  sleep_ms(1000);  // a retry would come after 300 ms
  CHECK(world.requests_to("strict").size() == 1);
  Json job = dead["jobs"][0];
  CHECK(job["id"] == "s1");
  CHECK(job["attempts"] == 1);
  std::string error = job["last_error"].get<std::string>();
  CHECK(error.find("HTTP 410") != std::string::npos);
  CHECK(error.find("gone") != std::string::npos);
  CHECK(error.find("dead_on") != std::string::npos);
}

// Each job's wait between its failed first attempt and its second.
std::vector<int64_t> return_waits(World& world, const std::string& topic, size_t jobs) {
  REQUIRE(wait_until(30000, [&] { return world.requests_to(topic).size() >= 2 * jobs; }));
  std::map<std::string, std::map<int, int64_t>> arrivals;
  for (const auto& request : world.requests_to(topic)) {
    arrivals[request.header("x-dq-id")][attempt_of(request)] = request.arrived_ms;
  }
  std::vector<int64_t> waits;
  for (auto& [id, by_attempt] : arrivals) {
    REQUIRE(by_attempt.count(1) == 1);
    REQUIRE(by_attempt.count(2) == 1);
    waits.push_back(by_attempt[2] - by_attempt[1]);
  }
  REQUIRE(waits.size() == jobs);
  return waits;
}

TEST_CASE("retry_jitter spreads jobs that failed together; without it they return together") {
  constexpr int64_t kWaitMs = 3000;
  constexpr size_t kJobs = 20;
  World world;
  for (auto [name, jitter] : {std::pair<const char*, int>{"jittered", 30}, {"together", 0}}) {
    Topic topic = world.topic(name);
    topic.retry_ms = std::to_string(kWaitMs);
    topic.retry_jitter = jitter;
    world.add(topic);
  }
  world.callback.set_responder([](const RecordedRequest& request, size_t) {
    return CallbackAnswer(request.header("x-dq-attempt") == "1" ? 500 : 200);
  });
  // The same due second for all 40 jobs: they fail together.
  Json jobs = Json::array();
  for (size_t i = 0; i < kJobs; ++i) {
    jobs.push_back(Json{{"id", "j" + std::to_string(i)}, {"body", 1}, {"delay", 1}});
  }
  for (const char* name : {"jittered", "together"}) {
    auto answer =
        world.http.post(world.dqd->jobs_url(name) + "/batch", Json{{"jobs", jobs}}.dump());
    REQUIRE(answer.status == 200);
  }
  for (const char* name : {"jittered", "together"}) {
    std::vector<int64_t> waits = return_waits(world, name, kJobs);
    auto [low, high] = std::minmax_element(waits.begin(), waits.end());
    MESSAGE(std::string(name), ": return waits from ", *low, " to ", *high, " ms");
    CHECK(*low >= kWaitMs);                    // never early
    CHECK(*high < kWaitMs * 13 / 10 + 10000);  // not absurdly late
    if (std::string(name) == "jittered") {
      CHECK(*high - *low >= kWaitMs / 5);
    } else {
      CHECK(*high - *low < kWaitMs / 5);
    }
  }
}

namespace {

// A logged-in admin session (tests/support/admin_client.h).
AdminClient admin_session(const std::string& base) {
  REQUIRE(wait_until(10000, [&] { return http_request("GET", base + "/login").status == 200; }));
  AdminClient admin(base);
  auto answer = admin.login("admin", "correct horse battery");
  REQUIRE(answer.status == 200);
  REQUIRE(!answer.header("set-cookie").empty());
  return admin;
}

}  // namespace

TEST_CASE("bad max_deferrals, dead_on and retry_jitter get a 400 JSON error and change nothing") {
  World world(/*admin=*/true);
  AdminClient admin = admin_session(world.dqd->admin_url());
  Json created{{"name", "rules"},
               {"callback_url", world.callback.url("/rules")},
               {"max_deferrals", 3},
               {"dead_on", "400,410"},
               {"retry_jitter", 20}};
  auto answer = admin.call("POST", "/api/topics", created.dump());
  REQUIRE_MESSAGE(answer.status == 201, answer.body);
  CHECK(answer.json()["max_deferrals"] == 3);
  CHECK(answer.json()["dead_on"] == "400,410");
  CHECK(answer.json()["retry_jitter"] == 20);
  Json shown = admin.call("GET", "/api/topics/rules", "").json();
  CHECK(shown["max_deferrals"] == 3);
  CHECK(shown["dead_on"] == "400,410");
  CHECK(shown["retry_jitter"] == 20);

  const std::vector<std::pair<std::string, Json>> bad = {
      {"max_deferrals", -1},  {"max_deferrals", 1001}, {"max_deferrals", "3"},
      {"max_deferrals", 2.5}, {"dead_on", "200"},      {"dead_on", "404,204"},
      {"dead_on", "99"},      {"dead_on", "600"},      {"dead_on", "4o4"},
      {"dead_on", "400,"},    {"dead_on", 400},        {"retry_jitter", -1},
      {"retry_jitter", 101},  {"retry_jitter", "20"},  {"retry_jitter", true},
  };
  std::string before = world.dqd->registry().get_topic("rules")->dead_on;
  for (const auto& [field, value] : bad) {
    CAPTURE(field);
    CAPTURE(value.dump());
    auto refused = admin.call("PUT", "/api/topics/rules", Json{{field, value}}.dump());
    CHECK(refused.status == 400);
    Json error = refused.json();
    REQUIRE(error.is_object());
    CHECK(error["field"] == field);
    CHECK(error["error"].get<std::string>().find(field) != std::string::npos);
    Json added = created;
    added["name"] = "other";
    added[field] = value;
    auto refused_add = admin.call("POST", "/api/topics", added.dump());
    CHECK(refused_add.status == 400);
    CHECK(refused_add.json()["field"] == field);
  }
  auto kept = world.dqd->registry().get_topic("rules");
  REQUIRE(kept.is_ok());
  CHECK(kept->max_deferrals == 3);
  CHECK(kept->dead_on == before);
  CHECK(kept->retry_jitter == 20);
  CHECK(world.dqd->registry().get_topic("other").status().code() == dq::Code::kNotFound);

  // dqctl: the same names as flags; bad values refused, good ones shown.
  const std::string config = world.dqd->config_path();
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--max-deferrals", "-1"},
                                                {"--dead-on", "200"},
                                                {"--retry-jitter", "101"},
                                                {"--retry-jitter", "x"}}) {
    std::vector<std::string> args = {"-c", config, "topic", "set", "rules"};
    args.insert(args.end(), flags.begin(), flags.end());
    RunResult result = run_dqctl(args, world.dqd->dir());
    CAPTURE(flags[0]);
    CHECK(result.exit_code != 0);
  }
  kept = world.dqd->registry().get_topic("rules");
  CHECK(kept->max_deferrals == 3);
  CHECK(kept->retry_jitter == 20);
  RunResult set = run_dqctl({"-c", config, "topic", "set", "rules", "--max-deferrals", "0",
                             "--dead-on", "410, 422", "--retry-jitter", "50"},
                            world.dqd->dir());
  CHECK_MESSAGE(set.exit_code == 0, set.err);
  RunResult show = run_dqctl({"-c", config, "--json", "topic", "show", "rules"}, world.dqd->dir());
  REQUIRE_MESSAGE(show.exit_code == 0, show.err);
  Json topic = Json::parse(show.out, nullptr, false);
  CHECK(topic["max_deferrals"] == 0);
  CHECK(topic["dead_on"] == "410, 422");
  CHECK(topic["retry_jitter"] == 50);
}

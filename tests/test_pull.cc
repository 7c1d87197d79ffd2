// Pull workers (docs/delivery.md, "Pull workers") against a real dqd (one
// timer, one consumer: the consumer must leave pull topics alone) and a real
// redis-server: workers reserve through libdqclient and raw HTTP, ack, nack,
// touch; leases that run out, stale tokens, the long poll's latency, and
// `dqctl work` end to end.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dq/client.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;
namespace dc = dq::client;

namespace {

Topic pull_topic(const std::string& name, int max_attempts = 0, const std::string& retry_ms = "") {
  Topic topic;
  topic.name = name;
  topic.mode = "pull";
  topic.max_attempts = max_attempts;
  topic.retry_ms = retry_ms;
  return topic;
}

struct PullHost {
  TestRedis redis;
  std::unique_ptr<DqdProcess> dqd;
  PullHost() {
    dqd = std::make_unique<DqdProcess>(one_timer_one_consumer({redis.address()}));
    add_topic(*dqd, pull_topic("many"));
    add_topic(*dqd, pull_topic("killed"));
    add_topic(*dqd, pull_topic("killed-work"));
    add_topic(*dqd, pull_topic("nacked", 2));
    add_topic(*dqd, pull_topic("stale"));
    add_topic(*dqd, pull_topic("latency"));
    add_topic(*dqd, pull_topic("work", 0, "300"));
    add_topic(*dqd, pull_topic("errors"));
    Topic capped = pull_topic("capped");
    capped.max_in_flight = 3;
    add_topic(*dqd, capped);
    Topic rated = pull_topic("rated");
    rated.max_rate = 10;
    rated.max_burst = 1;
    add_topic(*dqd, rated);
    dqd->add_topic("pushed");
    dqd->start();
  }
  dc::Client client() const {
    dc::Options options;
    options.servers = {"127.0.0.1:" + std::to_string(dqd->http_port())};
    options.timeout_ms = 5000;
    return dc::Client(options);
  }
};

PullHost& host() {
  static PullHost instance;
  return instance;
}

void add_jobs(const std::string& topic, int count, const std::string& prefix, double delay_s = 0) {
  dc::Client client = host().client();
  std::vector<dc::BatchJob> batch;
  for (int i = 0; i < count; ++i) {
    batch.push_back({prefix + std::to_string(i),
                     Json{{"n", i}, {"id", prefix + std::to_string(i)}}.dump(),
                     dc::When::delay(delay_s)});
    if (batch.size() == 500 || i + 1 == count) {
      auto added = client.add_batch(topic, batch);
      REQUIRE_MESSAGE(added.ok(), (added.ok() ? "" : added.error().message));
      for (const auto& result : *added) REQUIRE_MESSAGE(result.ok(), result.id);
      batch.clear();
    }
  }
}

// Reserves until one job comes (each call a long poll of up to wait_s).
std::optional<dc::ReservedJob> reserve_one(dc::Client& client, const std::string& topic, int ttr_s,
                                           int64_t within_ms, int wait_s = 2) {
  int64_t end = wall_ms() + within_ms;
  while (wall_ms() < end) {
    auto jobs = client.reserve(topic, {ttr_s, wait_s, 1});
    REQUIRE_MESSAGE(jobs.ok(), (jobs.ok() ? "" : jobs.error().message));
    if (!jobs->empty()) return jobs->front();
  }
  return std::nullopt;
}

std::string job_state(const std::string& topic, const std::string& id) {
  HttpClient http;
  HttpResult got = http.get(host().dqd->jobs_url(topic) + "/" + id);
  if (got.status != 200) return std::to_string(got.status);
  return got.json().value("state", std::string());
}

}  // namespace

TEST_CASE("two workers share 1,000 jobs: none given twice while leases hold, each acked once") {
  const int kJobs = 1000;
  add_jobs("many", kJobs, "m");
  std::mutex lock;
  std::map<std::string, int> reserved;  // id -> times handed out
  std::atomic<int> acked{0};
  std::atomic<int> ack_failures{0};
  auto worker = [&] {
    dc::Client client = host().client();
    int64_t end = wall_ms() + 60000;
    while (acked.load() < kJobs && wall_ms() < end) {
      auto jobs = client.reserve("many", {60, 1, 25});
      if (!jobs.ok()) {
        ack_failures++;
        continue;
      }
      for (const auto& job : *jobs) {
        {
          std::lock_guard<std::mutex> guard(lock);
          ++reserved[job.id];
        }
        if (client.ack(job).ok()) {
          acked++;
        } else {
          ack_failures++;
        }
      }
    }
  };
  std::thread first(worker);
  std::thread second(worker);
  first.join();
  second.join();
  int handed = 0;
  int twice = 0;
  for (const auto& [id, times] : reserved) {
    handed += times;
    if (times > 1) ++twice;
  }
  int lost = kJobs - static_cast<int>(reserved.size());
  MESSAGE("reserved " << handed << ", acked " << acked.load() << ", twice " << twice << ", lost "
                      << lost << ", failed calls " << ack_failures.load());
  CHECK(handed == kJobs);
  CHECK(acked.load() == kJobs);
  CHECK(twice == 0);
  CHECK(lost == 0);
  CHECK(ack_failures.load() == 0);
  HttpClient http;
  Json stats = http.get(host().dqd->base_url() + "/v1/topics/many/stats").json();
  CHECK(stats["total"].value("delivered", int64_t{-1}) == kJobs);
  CHECK(stats["now"].value("working", int64_t{-1}) == 0);
  std::string metrics = http.get(host().dqd->base_url() + "/metrics").body;
  CHECK(metrics.find("dq_pull_reserved_total{topic=\"many\"} 1000") != std::string::npos);
  CHECK(metrics.find("dq_pull_acked_total{topic=\"many\"} 1000") != std::string::npos);
}

TEST_CASE("a worker killed holding a job: it comes back after its ttr, not before, attempt 2") {
  add_jobs("killed", 1, "k");
  dc::Client dead_worker = host().client();
  auto held = reserve_one(dead_worker, "killed", 2, 10000);
  REQUIRE(held);
  CHECK(held->attempt == 1);
  // The dead worker never acks. Another one waits for the job.
  dc::Client other = host().client();
  auto again = reserve_one(other, "killed", 30, 15000, 5);
  int64_t got_at = wall_ms();
  REQUIRE(again);
  MESSAGE("lease ended at " << held->lease_until_ms << ", came back "
                            << got_at - held->lease_until_ms << " ms later");
  CHECK(again->id == held->id);
  CHECK(again->attempt == 2);
  CHECK(got_at >= held->lease_until_ms);
  CHECK(other.ack(*again).ok());
}

// The same with a real worker process: `dqctl work` running a command that
// never ends is killed -9 (with its command) while it holds the job.
TEST_CASE("dqctl work killed -9 holding a job: the job comes back after its ttr, attempt 2") {
  add_jobs("killed-work", 1, "kw");
  const std::string started = host().dqd->dir() + "/kw-started";
  std::remove(started.c_str());
  pid_t worker = fork();
  REQUIRE(worker >= 0);
  if (worker == 0) {
    setpgid(0, 0);  // its own group: the kill takes its command too
    std::string base = host().dqd->base_url();
    // The command writes its pid (dqctl work runs it in a process group of
    // its own, so the kill of dqctl's group below does not reach it).
    std::string script =
        "echo $$ > " + started + ".tmp; mv " + started + ".tmp " + started + "; exec sleep 600";
    execl(DQ_BUILD_DIR "/dqctl", "dqctl", "--url", base.c_str(), "work", "killed-work", "--ttr",
          "3", "--wait", "5", "--", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  bool running = wait_until(20000, [&] { return std::ifstream(started).good(); });
  int64_t killed_at = wall_ms();
  kill(-worker, SIGKILL);
  kill(worker, SIGKILL);
  waitpid(worker, nullptr, 0);
  // Its command, orphaned: killed too, or it would hold the test's output open.
  pid_t command = static_cast<pid_t>(std::atol(read_text_file(started).c_str()));
  if (command > 1) kill(command, SIGKILL);
  REQUIRE(running);
  CHECK(job_state("killed-work", "kw0") == "working");
  dc::Client other = host().client();
  auto again = reserve_one(other, "killed-work", 30, 20000, 5);
  int64_t got_at = wall_ms();
  REQUIRE(again);
  MESSAGE("dqctl work killed -9 holding kw0; back after " << got_at - killed_at
                                                          << " ms (ttr 3 s, from the kill)");
  CHECK(again->id == "kw0");
  CHECK(again->attempt == 2);
  CHECK(other.ack(*again).ok());
}

TEST_CASE(
    "nack: delay=2 brings the job back no earlier than 2 s later; past max attempts it is dead") {
  add_jobs("nacked", 1, "n");
  dc::Client client = host().client();
  auto job = reserve_one(client, "nacked", 30, 10000);
  REQUIRE(job);
  int64_t nacked_at = wall_ms();
  auto nacked = client.nack(*job, 2, "worker says no");
  REQUIRE_MESSAGE(nacked.ok(), (nacked.ok() ? "" : nacked.error().message));
  CHECK(nacked->state == "retrying");
  CHECK(nacked->due_ms >= nacked_at + 2000);
  CHECK(job_state("nacked", job->id) == "retrying");
  auto back = reserve_one(client, "nacked", 30, 10000, 5);
  int64_t back_at = wall_ms();
  REQUIRE(back);
  MESSAGE("nacked with delay=2, back after " << back_at - nacked_at << " ms");
  CHECK(back_at - nacked_at >= 2000);
  CHECK(back->attempt == 2);
  // max_attempts 2: this nack uses the last one.
  auto dead = client.nack(*back, 0, "still no");
  REQUIRE(dead.ok());
  CHECK(dead->state == "dead");
  CHECK(job_state("nacked", job->id) == "dead");
  HttpClient http;
  Json letters = http.get(host().dqd->base_url() + "/v1/topics/nacked/dead").json();
  CHECK(letters.dump().find("still no") != std::string::npos);
}

TEST_CASE(
    "a stale token (lease ran out and another worker has it; after ack) is 409, nothing changes") {
  add_jobs("stale", 1, "s");
  dc::Client first = host().client();
  dc::Client second = host().client();
  auto old_lease = reserve_one(first, "stale", 1, 10000);
  REQUIRE(old_lease);
  auto new_lease = reserve_one(second, "stale", 30, 15000, 5);
  REQUIRE(new_lease);
  CHECK(new_lease->token != old_lease->token);
  // The first worker's calls all fail as stale and change nothing.
  auto ack = first.ack(*old_lease);
  REQUIRE_FALSE(ack.ok());
  CHECK(ack.error().code == dc::ErrorCode::StaleToken);
  CHECK(ack.error().http_status == 409);
  CHECK(ack.error().message.find("nothing changed") != std::string::npos);
  auto nack = first.nack(*old_lease, 0);
  REQUIRE_FALSE(nack.ok());
  CHECK(nack.error().code == dc::ErrorCode::StaleToken);
  dc::ReservedJob copy = *old_lease;
  auto touch = first.touch(copy, 60);
  REQUIRE_FALSE(touch.ok());
  CHECK(touch.error().code == dc::ErrorCode::StaleToken);
  HttpClient http;
  Json job = http.get(host().dqd->jobs_url("stale") + "/" + new_lease->id).json();
  CHECK(job["state"] == "working");
  CHECK(job["attempts"] == 2);
  // The holder touches and acks; a second ack is stale.
  auto touched = second.touch(*new_lease, 60);
  REQUIRE(touched.ok());
  CHECK(*touched > old_lease->lease_until_ms);
  CHECK(second.ack(*new_lease).ok());
  auto again = second.ack(*new_lease);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == dc::ErrorCode::StaleToken);
  CHECK(job_state("stale", new_lease->id) == "404");
  // Many acks in one call: each has its own result; a stale one changes nothing.
  add_jobs("stale", 3, "b");
  std::vector<dc::ReservedJob> three;
  REQUIRE(wait_within(10000, [&] {
    auto jobs = second.reserve("stale", {30, 1, 3});
    REQUIRE(jobs.ok());
    three.insert(three.end(), jobs->begin(), jobs->end());
    return three.size() >= 3;
  }));
  std::vector<dc::ReservedJob> acks = three;
  acks.push_back(*new_lease);  // acked above: stale
  auto results = second.ack_batch("stale", acks);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 4);
  for (int n = 0; n < 3; ++n) CHECK((*results)[n].status == 200);
  CHECK((*results)[3].status == 409);
  REQUIRE((*results)[3].error);
  CHECK((*results)[3].error->code == dc::ErrorCode::StaleToken);
  for (const auto& job : three) CHECK(job_state("stale", job.id) == "404");
}

TEST_CASE("a long poll answers within 50 ms of a job becoming due") {
  dc::Client client = host().client();
  std::vector<int64_t> lags;
  for (int i = 0; i < 10; ++i) {
    add_jobs("latency", 1, "l" + std::to_string(i) + "-", 1.0);
    auto jobs = client.reserve("latency", {30, 10, 1});
    int64_t answered = wall_ms();
    REQUIRE(jobs.ok());
    REQUIRE(jobs->size() == 1);
    lags.push_back(answered - jobs->front().due_ms);
    CHECK(client.ack(jobs->front()).ok());
  }
  std::vector<int64_t> sorted = lags;
  std::sort(sorted.begin(), sorted.end());
  std::string all;
  for (int64_t lag : lags) all += std::to_string(lag) + " ";
  MESSAGE("due -> answer, ms: " << all << "(median " << sorted[sorted.size() / 2] << ", max "
                                << sorted.back() << ")");
  CHECK(sorted[sorted.size() / 2] < 50);
  CHECK(sorted.front() >= 0);  // never before it was due
}

TEST_CASE("dqctl work runs a command per job: exit 0 acks, exit 1 nacks and it is retried") {
  add_jobs("work", 20, "w");
  dc::Client client = host().client();
  auto failing = client.add("work", "fail-once", R"({"fail":true})", dc::When::delay(0));
  REQUIRE(failing.ok());
  std::string out = host().dqd->dir() + "/work-out.txt";
  // The body on stdin, the job in the environment; the failing job's first
  // attempt exits 1 with a message on stderr.
  std::string script =
      "body=$(cat); if [ \"$DQ_ID\" = fail-once ] && [ \"$DQ_ATTEMPT\" = 1 ]; then "
      "echo 'not this time' >&2; exit 1; fi; echo \"$DQ_ID $DQ_ATTEMPT $body\" >> " +
      out;
  auto ran = run_dqctl({"--url", host().dqd->base_url(), "work", "work", "--ttr", "10", "--wait",
                        "2", "--max-jobs", "22", "--", "sh", "-c", script},
                       host().dqd->dir());
  CHECK_MESSAGE(ran.exit_code == 0, ran.out << ran.err);
  std::ifstream file(out);
  std::set<std::string> ids;
  std::string line;
  int lines = 0;
  while (std::getline(file, line)) {
    ++lines;
    ids.insert(line.substr(0, line.find(' ')));
    if (line.rfind("fail-once", 0) == 0) CHECK(line.rfind("fail-once 2 ", 0) == 0);
  }
  CHECK(lines == 21);
  CHECK(ids.size() == 21);
  CHECK(ran.out.find("nacked work/fail-once (attempt 1): retrying, exit 1: not this time") !=
        std::string::npos);
  CHECK(job_state("work", "fail-once") == "404");
  CHECK(job_state("work", "w7") == "404");
}

TEST_CASE("reserve refuses a push topic (409), an unknown one (404) and bad parameters (400)") {
  HttpClient http;
  const std::string base = host().dqd->base_url() + "/v1/topics/";
  HttpResult push = http.get(base + "pushed/reserve");
  CHECK(push.status == 409);
  CHECK(push.json()["error"] ==
        "topic pushed is mode push: its jobs are delivered to its callback, not reserved");
  CHECK(http.get(base + "nosuch/reserve").status == 404);
  for (const auto& [query, name] :
       std::vector<std::pair<std::string, std::string>>{{"ttr=0", "ttr"},
                                                        {"ttr=86401", "ttr"},
                                                        {"ttr=x", "ttr"},
                                                        {"wait=61", "wait"},
                                                        {"wait=-1", "wait"},
                                                        {"count=0", "count"},
                                                        {"count=101", "count"}}) {
    HttpResult bad = http.get(base + "errors/reserve?" + query);
    CHECK_MESSAGE(bad.status == 400, query);
    CHECK_MESSAGE(bad.json()["error"].get<std::string>().rfind(name + ":", 0) == 0, bad.body);
  }
  // An empty answer when nothing is ready (wait=0 answers at once).
  HttpResult empty = http.get(base + "errors/reserve?wait=0");
  CHECK(empty.status == 200);
  CHECK(empty.json()["jobs"] == Json::array());
  // Worker calls need a token the reserve gave.
  HttpResult no_token = http.post(base + "errors/jobs/x/ack", "{}");
  CHECK(no_token.status == 400);
  HttpResult bogus = http.post(base + "errors/jobs/x/ack", R"({"token":"nonsense"})");
  CHECK(bogus.status == 400);
  // A pull topic needs no callback; a push topic still does.
  HttpResult made = http.request("PUT", base + "made-pull", R"({"mode":"pull"})");
  CHECK_MESSAGE(made.status == 201, made.body);
  CHECK(made.json()["mode"] == "pull");
  HttpResult refused = http.request("PUT", base + "made-push", R"({"mode":"push"})");
  CHECK(refused.status == 400);
  HttpResult wrong = http.request("PUT", base + "made-odd", R"({"mode":"poll"})");
  CHECK(wrong.status == 400);
  CHECK(wrong.json()["error"].get<std::string>().rfind("mode:", 0) == 0);
}

TEST_CASE(
    "max_in_flight holds over reserves: a full topic hands out nothing until an ack or a lease "
    "end") {
  add_jobs("capped", 10, "c");
  dc::Client first = host().client();
  dc::Client second = host().client();
  std::vector<dc::ReservedJob> held;
  REQUIRE(wait_within(10000, [&] {
    auto jobs = first.reserve("capped", {2, 1, 10});
    REQUIRE(jobs.ok());
    held.insert(held.end(), jobs->begin(), jobs->end());
    return held.size() >= 3;
  }));
  CHECK(held.size() == 3);
  auto none = second.reserve("capped", {30, 0, 10});
  REQUIRE(none.ok());
  CHECK(none->empty());
  // An ack frees one place: a waiting reserve gets one job, no more.
  std::thread acker([&] {
    sleep_ms(300);
    CHECK(first.ack(held[0]).ok());
  });
  auto one = second.reserve("capped", {30, 5, 10});
  acker.join();
  REQUIRE(one.ok());
  CHECK(one->size() == 1);
  // The two other leases (ttr 2 s) end: their places come free.
  std::vector<dc::ReservedJob> later;
  REQUIRE(wait_within(15000, [&] {
    auto jobs = second.reserve("capped", {30, 2, 10});
    REQUIRE(jobs.ok());
    later.insert(later.end(), jobs->begin(), jobs->end());
    return later.size() >= 2;
  }));
  CHECK(later.size() == 2);
  for (const auto& job : one.value()) CHECK(second.ack(job).ok());
  for (const auto& job : later) CHECK(second.ack(job).ok());
}

TEST_CASE("max_rate holds over reserves: jobs handed out per second") {
  add_jobs("rated", 60, "r");
  dc::Client client = host().client();
  int64_t start = wall_ms();
  int handed = 0;
  while (wall_ms() - start < 2000) {
    auto jobs = client.reserve("rated", {30, 1, 100});
    REQUIRE(jobs.ok());
    handed += static_cast<int>(jobs->size());
    for (const auto& job : *jobs) CHECK(client.ack(job).ok());
  }
  double seconds = static_cast<double>(wall_ms() - start) / 1000.0;
  MESSAGE("max_rate 10: " << handed << " jobs in " << seconds << " s");
  CHECK(handed >= 10);
  CHECK(handed <= 10 * seconds + 2);
}

TEST_CASE("dqctl: topic add --mode pull needs no callback; reserve, ack and a stale ack") {
  const std::string config = host().dqd->config_path();
  auto added =
      run_dqctl({"-c", config, "topic", "add", "cli-pull", "--mode", "pull"}, host().dqd->dir());
  CHECK_MESSAGE(added.exit_code == 0, added.err);
  auto refused = run_dqctl({"-c", config, "topic", "add", "cli-push"}, host().dqd->dir());
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("--mode pull") != std::string::npos);
  auto shown = run_dqctl({"-c", config, "topic", "show", "cli-pull"}, host().dqd->dir());
  CHECK(shown.out.find("pull") != std::string::npos);

  add_jobs("stale", 1, "cli");
  const std::string url = host().dqd->base_url();
  Json reserved;
  REQUIRE(wait_within(10000, [&] {
    auto ran =
        run_dqctl({"--url", url, "--json", "reserve", "stale", "--wait", "1"}, host().dqd->dir());
    REQUIRE_MESSAGE(ran.exit_code == 0, ran.err);
    reserved = Json::parse(ran.out, nullptr, false);
    return reserved.is_object() && !reserved["jobs"].empty();
  }));
  const Json& job = reserved["jobs"][0];
  std::string id = job["id"];
  std::string token = job["token"];
  auto touched =
      run_dqctl({"--url", url, "touch", "stale", id, token, "--ttr", "60"}, host().dqd->dir());
  CHECK_MESSAGE(touched.exit_code == 0, touched.err);
  auto acked = run_dqctl({"--url", url, "ack", "stale", id, token}, host().dqd->dir());
  CHECK_MESSAGE(acked.exit_code == 0, acked.err);
  CHECK(acked.out.find("acked") != std::string::npos);
  auto again = run_dqctl({"--url", url, "ack", "stale", id, token}, host().dqd->dir());
  CHECK(again.exit_code == 1);
  CHECK(again.err.find("StaleToken (409)") != std::string::npos);
}

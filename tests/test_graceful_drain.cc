// End-to-end: a graceful reload (USR2) or stop never delivers a job twice,
// even when its callback outlasts [master] drain_timeout_ms. The retiring
// consumer finishes the calls it holds, up to the longest topic timeout
// (common/registry/drain_time.h), and acks them; the master waits for it that long.
// Real dqd, real redis-server, a real callback server that takes 12 s.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/job_counts.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"

using dq::Json;
using namespace dq::test;

namespace {

constexpr int kCallbackMs = 12000;      // each callback takes this long
constexpr int kTopicTimeoutMs = 20000;  // the topic allows it
constexpr int kLeaseMarginMs = 1000;    // a lease ends at timeout + margin after the reserve
constexpr int kJobs = 5;

std::string log_text(const DqdProcess& dqd) {
  std::string out;
  std::string command = "cat " + dqd.log_dir() + "/*err* 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return out;
  }
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    out.append(buffer, got);
  }
  pclose(pipe);
  return out;
}

struct SlowWorld {
  TestRedis redis;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
  std::map<std::string, int64_t> accepted;

  SlowWorld() {
    callback.set_responder([](const RecordedRequest&, size_t) {
      return CallbackAnswer{200, kCallbackMs};
    });
    DqdOptions options;
    options.shards = {redis.address()};
    options.workers = 1;
    options.timers = 1;
    options.consumers = 1;
    options.drain_timeout_ms = 10000;  // the shipped default, shorter than the callbacks
    options.extra_ini = "[delivery]\nlease_margin_ms = " + std::to_string(kLeaseMarginMs) + "\n";
    dqd = std::make_unique<DqdProcess>(options);
    register_topic(*dqd, "slow", callback.url(), kTopicTimeoutMs);
    dqd->start();
    HttpClient http;
    for (int n = 0; n < kJobs; ++n) {
      std::string id = "slow-" + std::to_string(n);
      HttpResult added = http.post(dqd->jobs_url("slow"), job_doc(id, n, 0));
      REQUIRE(added.status == 201);
      accepted[id] = added.json().value("due_at_ms", int64_t{0});
    }
    // Every callback is in flight before the signal comes.
    REQUIRE(callback.wait_for(kJobs, 10000));
  }

  // Waits past the point where a job whose first call was cut off would have
  // gone out again (its lease: timeout + margin after its reserve), then counts.
  JobCounts count_after_leases() {
    int64_t first_call_ms = callback.requests().front().arrived_ms;
    int64_t leases_over_ms = first_call_ms + kTopicTimeoutMs + kLeaseMarginMs + 3000;
    sleep_ms(static_cast<int>(std::max<int64_t>(0, leases_over_ms - wall_ms())));
    std::vector<Arrived> arrivals;
    for (const auto& request : callback.requests()) {
      arrivals.push_back({request.header("x-dq-id"), request.arrived_ms});
    }
    return count_jobs(accepted, arrivals);
  }

  // Jobs dq still holds (GET is not 404): an ack that never landed.
  int still_held() {
    HttpClient http;
    int held = 0;
    for (const auto& entry : accepted) {
      held += http.get(dqd->jobs_url("slow") + "/" + entry.first).status == 404 ? 0 : 1;
    }
    return held;
  }
};

}  // namespace

TEST_CASE("USR2 one second into 12 s callbacks (topic timeout 20 s): each job delivered once") {
  SlowWorld world;
  pid_t master = world.dqd->pid();
  std::vector<pid_t> old_consumers = children_titled(master, "dq-consume_");
  REQUIRE(old_consumers.size() == 1);
  sleep_ms(1000);
  REQUIRE(kill(master, SIGUSR2) == 0);

  // The old consumer finishes its 12 s calls, acks them and exits by itself.
  bool old_gone = wait_until(kCallbackMs + 8000, [&] { return kill(old_consumers[0], 0) != 0; });
  JobCounts counts = world.count_after_leases();
  int held = world.still_held();
  std::string logs = log_text(*world.dqd);
  bool killed = logs.find("still running at the drain deadline: SIGKILL") != std::string::npos;
  std::printf(
      "USR2 at 1 s, callbacks 12 s, topic timeout 20 s, drain_timeout_ms 10 s: %s; callback "
      "requests %zu; still held %d; old consumer %s\n",
      counts.line().c_str(), world.callback.count(), held,
      killed ? "KILLED at the drain deadline" : "exited by itself");
  CHECK(old_gone);
  CHECK_FALSE(killed);
  CHECK(counts.accepted == kJobs);
  CHECK(counts.delivered == kJobs);
  CHECK(counts.duplicated == 0);
  CHECK(counts.lost == 0);
  CHECK(counts.early == 0);
  CHECK(world.callback.count() == static_cast<size_t>(kJobs));
  CHECK(held == 0);
  CHECK(world.dqd->stop() == 0);
}

TEST_CASE("SIGTERM one second into 12 s callbacks: the stop waits for them, each delivered once") {
  SlowWorld world;
  sleep_ms(1000);
  // stop() sends SIGTERM and waits up to its timeout for dqd to exit.
  int64_t before = dq::test::wall_ms();
  int status = world.dqd->stop(kTopicTimeoutMs + kLeaseMarginMs + 5000);
  int64_t took = dq::test::wall_ms() - before;
  std::vector<Arrived> arrivals;
  for (const auto& request : world.callback.requests()) {
    arrivals.push_back({request.header("x-dq-id"), request.arrived_ms});
  }
  JobCounts counts = count_jobs(world.accepted, arrivals);
  std::string logs = log_text(*world.dqd);
  std::printf("SIGTERM at 1 s, callbacks 12 s: dqd exited %d after %lld ms; %s\n", status,
              static_cast<long long>(took), counts.line().c_str());
  CHECK(status == 0);
  CHECK(logs.find("SIGKILL") == std::string::npos);
  CHECK(counts.delivered == kJobs);
  CHECK(counts.duplicated == 0);
  // Acked before the consumer exited: the next start finds none of them.
  world.dqd->start();
  int held = world.still_held();
  std::printf("jobs still held after a restart: %d\n", held);
  CHECK(held == 0);
  CHECK(world.dqd->stop() == 0);
}

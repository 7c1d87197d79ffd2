// End-to-end tests of the API server's descriptor budget
// (server/connection_budget.h): a real dqd, started under a given open files
// limit (prlimit), faced with thousands of idle or half-sent connections. An
// add must still answer, the worker must not spin (its CPU time from
// /proc/PID/stat), and the jobs added meanwhile are counted: accepted,
// delivered, duplicated, lost, early.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/idle_connections.h"
#include "tests/support/job_counts.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using namespace dq::test;

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// All of dqd's log files of one kind ("err") as one text.
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

using dq::test::occurrences;

// One dqd with one API worker, one timer, one consumer, started under
// `nofile` ("SOFT:HARD") open files.
DqdOptions one_worker(const TestRedis& redis, const std::string& nofile) {
  DqdOptions options;
  options.shards = {redis.address()};
  options.workers = 1;
  options.timers = 1;
  options.consumers = 1;
  options.drain_timeout_ms = 3000;
  options.wrapper = {"prlimit", "--nofile=" + nofile};
  // Idle connections are the point: they must not time out during the test.
  options.extra_ini = "[server]\nidle_timeout_ms = 600000\nlegacy_idle_timeout_ms = 600000\n";
  return options;
}

// The worker's connection budget, from its log line ("connections: at most N open at once").
size_t logged_budget(const DqdProcess& dqd) {
  size_t budget = 0;
  wait_until(5000, [&] {
    std::string logs = log_text(dqd);
    size_t at = logs.find("connections: at most ");
    if (at != std::string::npos) {
      budget = std::stoul(logs.substr(at + 21));
    }
    return budget > 0;
  });
  return budget;
}

pid_t api_worker(const DqdProcess& dqd) {
  std::vector<pid_t> workers;
  wait_until(5000,
             [&] { return (workers = children_titled(dqd.pid(), "dq-server_")).size() == 1; });
  REQUIRE(workers.size() == 1);
  return workers[0];
}

// CPU seconds the process uses in `ms` of wall time.
double cpu_during(pid_t pid, int ms) {
  double before = cpu_seconds_of(pid);
  sleep_ms(ms);
  return cpu_seconds_of(pid) - before;
}

// Adds `count` jobs due 0.5 s later on fresh connections; id -> due_at_ms of each 201.
// The first add's latency goes to *first_ms.
std::map<std::string, int64_t> add_jobs(const DqdProcess& dqd, const std::string& topic,
                                        const std::string& prefix, int count, int64_t* first_ms) {
  std::map<std::string, int64_t> accepted;
  for (int n = 0; n < count; ++n) {
    int64_t start = steady_ms();
    HttpResult added =
        http_request("POST", dqd.jobs_url(topic), job_doc(prefix + std::to_string(n), n, 0.5));
    if (n == 0 && first_ms != nullptr) {
      *first_ms = steady_ms() - start;
    }
    CHECK_MESSAGE(added.status == 201, "add " << n << ": " << added.status << " " << added.error);
    if (added.status == 201) {
      accepted[prefix + std::to_string(n)] = added.json().value("due_at_ms", int64_t{0});
    }
  }
  return accepted;
}

JobCounts settle_and_count(const CallbackServer& callback,
                           const std::map<std::string, int64_t>& accepted) {
  wait_until(15000, [&] { return deliveries_by_id(callback).size() >= accepted.size(); });
  sleep_ms(500);  // a duplicate on its way arrives by now
  std::vector<Arrived> arrivals;
  for (const auto& request : callback.requests()) {
    arrivals.push_back({request.header("x-dq-id"), request.arrived_ms});
  }
  return count_jobs(accepted, arrivals);
}

void check_counts(const JobCounts& counts, size_t expected) {
  CHECK(counts.accepted == expected);
  CHECK(counts.delivered == expected);
  CHECK(counts.duplicated == 0);
  CHECK(counts.lost == 0);
  CHECK(counts.early == 0);
}

}  // namespace

TEST_CASE("20,000 idle connections: an add answers 201 at once and the API worker does not spin") {
  constexpr size_t kIdle = 20000;
  rlimit own{};
  getrlimit(RLIMIT_NOFILE, &own);
  std::string hard = std::to_string(own.rlim_max);
  TestRedis redis;
  CallbackServer callback;
  // The usual soft limit of 1,024 under this machine's hard limit: the master
  // raises the soft one to the hard one before it forks the worker.
  DqdOptions options = one_worker(redis, "1024:" + hard);
  options.extra_ini += "max_connections = 30000\n";  // the descriptors are the limit here
  DqdProcess dqd(options);
  dqd.add_topic("idle", callback.url());
  dqd.start();
  pid_t worker = api_worker(dqd);
  size_t budget = logged_budget(dqd);
  REQUIRE(budget > 0);

  // Held by helper processes: this one's own limit may be below 20,000.
  int64_t start = steady_ms();
  double cpu_before = cpu_seconds_of(worker);
  IdleFlood idle(dqd.http_port(), kIdle);
  CHECK(idle.opened() == kIdle);
  int64_t open_ms = steady_ms() - start;
  double open_cpu = cpu_seconds_of(worker) - cpu_before;
  CHECK(idle.opened() == kIdle);
  bool held = wait_until(30000, [&] { return descriptors_of(worker) >= std::min(kIdle, budget); });
  size_t worker_fds = descriptors_of(worker);
  CHECK_MESSAGE(held, "the worker holds " << worker_fds << " descriptors");

  double idle_cpu = cpu_during(worker, 3000);
  int64_t first_add_ms = 0;
  auto accepted = add_jobs(dqd, "idle", "idle-", 20, &first_add_ms);
  JobCounts counts = settle_and_count(callback, accepted);
  size_t closed = idle.closed_by_server();
  // Past the budget each new connection took the place of the oldest idle one.
  size_t must_close = kIdle > budget ? kIdle - budget : 0;
  std::string logs = log_text(dqd);
  std::printf(
      "20,000 idle (hard limit %s, budget %zu): opened %zu in %lld ms (worker CPU %.2f s), worker "
      "holds %zu "
      "descriptors, %zu closed by the server (at least %zu); worker CPU %.2f s in 3 s; first add "
      "%lld ms; %s\n",
      hard.c_str(), budget, idle.opened(), static_cast<long long>(open_ms), open_cpu, worker_fds,
      closed, must_close, idle_cpu, static_cast<long long>(first_add_ms), counts.line().c_str());
  CHECK(idle_cpu < 0.5);
  CHECK(closed >= must_close);
  CHECK(closed <= must_close + 40);  // and the adds' own connections
  check_counts(counts, 20);
  CHECK(logs.find("open files limit raised from 1024 to " + hard) != std::string::npos);
  CHECK(dqd.stop() == 0);
}

TEST_CASE(
    "open files limit 1,024: 1,100 idle connections, the oldest closed, adds answer on both "
    "ports") {
  IdleConnections::allow_descriptors(4096);
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_worker(redis, "1024:1024"));
  dqd.add_topic("low", callback.url());
  dqd.start();
  pid_t worker = api_worker(dqd);

  IdleConnections http_idle;
  IdleConnections legacy_idle;
  size_t opened = http_idle.open(dqd.http_port(), 550) + legacy_idle.open(dqd.legacy_port(), 550);
  CHECK(opened == 1100);
  // The budget is below 1,024: the worker closes the connections idle the longest.
  bool some_closed = wait_until(10000, [&] {
    return http_idle.closed_by_server() + legacy_idle.closed_by_server() >= 1100 - 1000;
  });
  CHECK(some_closed);
  size_t worker_fds = descriptors_of(worker);
  CHECK(worker_fds < 1024);

  double idle_cpu = cpu_during(worker, 2000);
  int64_t first_add_ms = 0;
  auto accepted = add_jobs(dqd, "low", "low-", 10, &first_add_ms);
  LegacySocket legacy(dqd.legacy_port());
  for (int n = 0; n < 10; ++n) {
    std::string id = "legacy-" + std::to_string(n);
    Json reply =
        legacy.call(Json{{"cmd", "add"}, {"topic", "low"}, {"id", id}, {"body", {{"n", n}}}});
    bool added = reply.is_object() && reply.value("code", -1) == 1;
    CHECK_MESSAGE(added, reply.dump());
    if (added) {
      accepted[id] = 0;  // due at once (the topic's default delay is 0)
    }
  }
  JobCounts counts = settle_and_count(callback, accepted);
  size_t closed_http = http_idle.closed_by_server();
  size_t closed_legacy = legacy_idle.closed_by_server();
  std::string logs = log_text(dqd);
  std::printf(
      "limit 1024, 1,100 idle: closed by the server %zu HTTP + %zu legacy (oldest first), worker "
      "holds %zu descriptors; worker CPU %.2f s in 2 s; first add %lld ms; %s\n",
      closed_http, closed_legacy, worker_fds, idle_cpu, static_cast<long long>(first_add_ms),
      counts.line().c_str());
  CHECK(idle_cpu < 0.5);
  check_counts(counts, 20);
  // The HTTP connections were opened first: they are the oldest and go first.
  CHECK(closed_http >= closed_legacy);
  CHECK(occurrences(logs, "idle connection(s), oldest first") >= 1);
  CHECK(occurrences(logs, "idle connection(s), oldest first") <= 3);  // not one line per close
  CHECK(dqd.stop() == 0);
}

TEST_CASE("open files limit 1,024: 1,300 connections all busy, accept pauses without spinning") {
  IdleConnections::allow_descriptors(4096);
  TestRedis redis;
  CallbackServer callback;
  DqdOptions options = one_worker(redis, "1024:1024");
  options.extra_ini += "request_timeout_ms = 600000\n";
  DqdProcess dqd(options);
  dqd.add_topic("busy", callback.url());
  dqd.start();
  pid_t worker = api_worker(dqd);

  // Each connection starts a request and never finishes it: none is idle, so
  // none can be closed to make room; the ones past the budget wait in the
  // listening socket's queue.
  IdleConnections busy;
  size_t budget = logged_budget(dqd);
  size_t opened = busy.open(dqd.http_port(), 1300, 10000, kUnfinishedHttpHead);
  CHECK(opened == 1300);
  size_t plateau = 0;
  wait_until(10000, [&] {
    size_t now = descriptors_of(worker);
    bool stable = now == plateau && now > 500;
    plateau = now;
    sleep_ms(200);
    return stable;
  });
  double paused_cpu = cpu_during(worker, 2000);
  std::string logs = log_text(dqd);
  size_t pause_lines = occurrences(logs, "not accepting for now");
  // A connection the worker accepted before its first bytes came was idle,
  // and may have made room: enough stay busy to fill the budget.
  size_t evicted = busy.closed_by_server();
  CHECK(opened - evicted > budget);

  // 600 clients go away: the worker accepts again, the waiting connections
  // get in, and an add answers.
  busy.close_first(600);
  int64_t first_add_ms = 0;
  auto accepted = add_jobs(dqd, "busy", "busy-", 10, &first_add_ms);
  JobCounts counts = settle_and_count(callback, accepted);
  std::printf(
      "limit 1024, 1,300 busy: worker held %zu descriptors while paused (%zu closed by it); worker "
      "CPU %.2f s in 2 s; pause warnings %zu; after 600 closed, first add %lld ms; %s\n",
      plateau, evicted, paused_cpu, pause_lines, static_cast<long long>(first_add_ms),
      counts.line().c_str());
  CHECK(plateau < 1024);
  CHECK(paused_cpu < 0.5);
  CHECK(pause_lines == 1);
  check_counts(counts, 10);
  CHECK(dqd.stop() == 0);
}

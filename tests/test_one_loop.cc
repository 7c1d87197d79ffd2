// The consumer and the timer on one loop each, end to end with a real dqd,
// real redis-servers and a real callback server:
// - a consumer paused (SIGSTOP 3.5 s, as a GC pause, swap or a VM's stolen
//   time would) while its 32 calls were open and answered within 200 ms:
//   none is judged late, none goes out again, no attempt is used and the
//   receiver's circuit stays closed (consumer/transfer_clock.h; the fault
//   suite has the same with a load beside it);
// - the consumer's clock itself, on a loop of the test's own: a call whose
//   loop stood still before its request went out gets that time back, an
//   answer waiting is read before any call is judged late, and a call with
//   no answer is judged late at its deadline;
// - every dq-consume_N and dq-timer_N process runs at most two threads
//   (/proc/PID/task) while it delivers through caps, circuits and two shards.
#include <dirent.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/alerts/alert_outbox.h"
#include "common/core/clock.h"
#include "common/core/event_handles.h"
#include "common/core/json.h"
#include "common/http/curl_handle.h"
#include "common/store/circuit_store.h"
#include "consumer/curl_loop.h"
#include "consumer/transfer_clock.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"

using dq::Json;
using namespace dq::test;

namespace {

constexpr int kPauseJobs = 300;
constexpr int kConcurrency = 32;
constexpr int kAnswerMs = 150;  // every call is answered this long after it arrives
constexpr int kPauseMs = 3500;
constexpr int kTimeoutMs = 2000;  // the topic's: shorter than the pause

// Calls per job id, and the attempt numbers they carried.
struct Calls {
  std::mutex mutex;
  std::map<std::string, int> per_id;
  std::map<std::string, int> highest_attempt;

  Responder responder() {
    return [this](const RecordedRequest& request, size_t) {
      std::lock_guard<std::mutex> lock(mutex);
      std::string id = request.header("x-dq-id");
      ++per_id[id];
      highest_attempt[id] =
          std::max(highest_attempt[id], std::stoi(request.header("x-dq-attempt")));
      return CallbackAnswer(200, kAnswerMs);
    };
  }
  size_t jobs_called() {
    std::lock_guard<std::mutex> lock(mutex);
    return per_id.size();
  }
  int called_twice() {
    std::lock_guard<std::mutex> lock(mutex);
    int twice = 0;
    for (const auto& entry : per_id) {
      twice += entry.second > 1 ? 1 : 0;
    }
    return twice;
  }
  int later_attempts() {
    std::lock_guard<std::mutex> lock(mutex);
    int later = 0;
    for (const auto& entry : highest_attempt) {
      later += entry.second > 1 ? 1 : 0;
    }
    return later;
  }
};

void add_jobs(HttpClient& http, const DqdProcess& dqd, const std::string& topic,
              const std::string& prefix, int count, double delay_s) {
  for (int start = 0; start < count; start += 500) {
    Json jobs = Json::array();
    for (int i = start; i < std::min(count, start + 500); ++i) {
      jobs.push_back(
          Json{{"id", prefix + std::to_string(i)}, {"body", Json{{"i", i}}}, {"delay", delay_s}});
    }
    auto answer = http.post(dqd.jobs_url(topic) + "/batch", Json{{"jobs", jobs}}.dump());
    REQUIRE(answer.status == 200);
  }
}

int circuit_alerts(const DqdProcess& dqd) {
  auto outbox = dq::AlertOutbox::open(dqd.sqlite_path());
  REQUIRE(outbox.is_ok());
  auto recent = (*outbox)->recent(1000);
  REQUIRE(recent.is_ok());
  int count = 0;
  for (const auto& event : *recent) {
    count += event.kind.rfind("circuit_", 0) == 0 ? 1 : 0;
  }
  return count;
}

// Every err log file of the host, one after the other.
std::string err_logs(const DqdProcess& dqd) {
  std::string all;
  for (const auto& entry : std::filesystem::directory_iterator(dqd.log_dir())) {
    if (entry.path().filename().string().rfind("err_", 0) == 0) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      all += text.str();
    }
  }
  return all;
}

// A string reply's text; "" for nil.
std::string text_of(const redisReply* reply) {
  return reply != nullptr && reply->type == REDIS_REPLY_STRING ? std::string(reply->str, reply->len)
                                                               : std::string();
}

// The threads of a process now (entries of /proc/PID/task).
int threads_of(pid_t pid) {
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (dir == nullptr) {
    return 0;
  }
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    count += entry->d_name[0] != '.' ? 1 : 0;
  }
  closedir(dir);
  return count;
}

}  // namespace

TEST_CASE("a consumer paused 3.5 s with 32 calls answered: none late, none twice, circuit closed") {
  TestRedis redis;
  Calls calls;
  CallbackServer callback;
  callback.set_responder(calls.responder());
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 1;
  options.consumer_concurrency = kConcurrency;
  DqdProcess dqd(options);
  dq::Topic topic;
  topic.name = "paused";
  topic.callback_url = callback.url("/paused");
  topic.timeout_ms = kTimeoutMs;
  topic.circuit_breaker = true;
  topic.circuit_failures = 5;
  REQUIRE(dqd.registry().add_topic(topic).is_ok());
  dqd.start();
  // The master forks the roles once /healthz answers: wait for the consumer.
  std::vector<pid_t> consumers;
  REQUIRE(wait_until(10000, [&] {
    consumers = children_titled(dqd.pid(), "dq-consume_");
    return consumers.size() == 1;
  }));
  HttpClient http;
  add_jobs(http, dqd, "paused", "p", kPauseJobs, 1.0);

  // The consumer fills its 32 slots; it stops right after the 32nd call
  // arrives, and every one of them is answered while it is stopped.
  REQUIRE(wait_until(15000, [&] { return callback.count() >= kConcurrency; }));
  REQUIRE(kill(consumers[0], SIGSTOP) == 0);
  size_t open_at_stop = callback.open_now();
  sleep_ms(kPauseMs);
  size_t answered_in_pause = callback.count() - callback.open_now();
  REQUIRE(kill(consumers[0], SIGCONT) == 0);

  bool all = wait_until(30000, [&] { return calls.jobs_called() == kPauseJobs; });
  sleep_ms(1000);  // a second call of a job would come by now
  Json stats = http.get(dqd.base_url() + "/v1/topics/paused/stats").json();
  std::string receiver = "127.0.0.1:" + std::to_string(callback.port());
  auto failures = redis.command({"HGET", dq::keys::circuit(receiver), "failures"});
  auto phase = redis.command({"HGET", dq::keys::circuit(receiver), "phase"});
  std::string log = err_logs(dqd);
  MESSAGE("paused " << kPauseMs << " ms with " << open_at_stop << " calls open, "
                    << answered_in_pause << " answered during the pause; " << calls.jobs_called()
                    << " of " << kPauseJobs << " jobs called, " << calls.called_twice()
                    << " twice, " << calls.later_attempts() << " with attempt > 1; failed "
                    << stats["total"]["failed"] << "; circuit alerts " << circuit_alerts(dqd)
                    << ", failures counted " << text_of(failures.get()) << ", phase "
                    << text_of(phase.get()));
  CHECK(open_at_stop >= 1);
  CHECK(all);
  CHECK(calls.called_twice() == 0);
  CHECK(calls.later_attempts() == 0);
  CHECK(stats["total"]["failed"].get<int64_t>() == 0);
  CHECK(circuit_alerts(dqd) == 0);
  CHECK((text_of(failures.get()) == "" || text_of(failures.get()) == "0"));
  CHECK((text_of(phase.get()) == "" || text_of(phase.get()) == "closed"));
  CHECK(log.find("timed out") == std::string::npos);
}

TEST_CASE("every dq-consume and dq-timer process runs at most two threads while it delivers") {
  TestRedis first;
  TestRedis second;
  Calls calls;
  CallbackServer callback;
  callback.set_responder([](const RecordedRequest&, size_t) { return CallbackAnswer(200, 20); });
  DqdOptions options;
  options.shards = {first.address(), second.address()};
  options.timers = 2;
  options.consumers = 2;
  options.consumer_concurrency = 16;
  DqdProcess dqd(options);
  // One topic per path the consumer takes: plain, capped (permits), with a
  // circuit breaker (circuits), and one called by host name (libcurl's
  // resolver may run a thread of its own for it: the one allowed second).
  std::vector<std::string> names = {"plain", "capped", "breaker", "named"};
  for (const auto& name : names) {
    dq::Topic topic;
    topic.name = name;
    topic.callback_url = callback.url("/" + name);
    if (name == "named") {
      topic.callback_url = "http://localhost:" + std::to_string(callback.port()) + "/named";
    }
    topic.timeout_ms = 2000;
    topic.circuit_breaker = name == "breaker";
    if (name == "capped") {
      topic.max_in_flight = 4;
      topic.max_rate = 200;
    }
    REQUIRE(dqd.registry().add_topic(topic).is_ok());
  }
  dqd.start();
  HttpClient http;
  for (const auto& name : names) {
    add_jobs(http, dqd, name, name + "-", 100, 0.5);
  }
  std::vector<pid_t> roles;
  REQUIRE(wait_until(10000, [&] {
    roles = children_titled(dqd.pid(), "dq-consume_");
    for (pid_t timer : children_titled(dqd.pid(), "dq-timer_")) {
      roles.push_back(timer);
    }
    return roles.size() == 4;
  }));
  std::map<pid_t, int> most;
  bool all = wait_until(30000, [&] {
    for (pid_t pid : roles) {
      most[pid] = std::max(most[pid], threads_of(pid));
    }
    return callback.count() >= 400;
  });
  std::string seen;
  for (const auto& [pid, threads] : most) {
    seen += " " + std::to_string(threads);
  }
  MESSAGE("most threads seen per consumer and timer process:" << seen << "; calls "
                                                              << callback.count());
  CHECK(all);
  for (const auto& [pid, threads] : most) {
    CHECK(threads >= 1);
    CHECK(threads <= 2);
  }
}

namespace {

size_t discard(char*, size_t size, size_t count, void*) { return size * count; }

// Calls on a loop of the test's own, as the consumer makes them: a CurlLoop
// and a TransferClock, each call's end written down.
struct ClockedCalls {
  dq::UniqueEventBase base{event_base_new()};
  std::map<CURL*, std::string> ended;
  std::unique_ptr<dq::CurlLoop> curl;
  std::unique_ptr<dq::TransferClock> clock;
  std::vector<dq::CurlEasy> handles;

  ClockedCalls() {
    curl = std::make_unique<dq::CurlLoop>(base.get(), [this](CURL* easy, CURLcode code) {
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      end(easy, code == CURLE_OK ? "answered " + std::to_string(status) : "failed");
    });
    clock = std::make_unique<dq::TransferClock>(base.get(), *curl,
                                                [this](CURL* easy) { end(easy, "late"); });
  }
  ~ClockedCalls() {
    for (auto& easy : handles) {
      curl->remove(easy.get());
    }
  }
  void end(CURL* easy, const std::string& how) {
    clock->end(easy);
    curl->remove(easy);
    ended[easy] = how;
  }
  // Starts a GET with a deadline timeout_ms from now (and as much again at most).
  CURL* start(const std::string& url, int64_t timeout_ms) {
    handles.emplace_back(curl_easy_init());
    CURL* easy = handles.back().get();
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    REQUIRE(curl->add(easy) == CURLM_OK);
    int64_t now = dq::monotonic_ms();
    clock->start(easy, now + timeout_ms, now + 10 * timeout_ms);
    return easy;
  }
  // Runs the loop until `easy` ended (at most 10 s).
  void run_until_ended(CURL* easy) {
    int64_t end = dq::monotonic_ms() + 10000;
    while (ended.count(easy) == 0 && dq::monotonic_ms() < end) {
      event_base_loop(base.get(), EVLOOP_ONCE);
    }
  }
};

}  // namespace

TEST_CASE(
    "the consumer's clock: a stall is given back, an answer waiting is read, silence is late") {
  CallbackServer server;
  server.set_responder([](const RecordedRequest& request, size_t) {
    return CallbackAnswer(200, request.path == "/silent" ? 3000 : 50);
  });
  ClockedCalls calls;

  // The loop stands still 1 s right after the call starts, before its
  // request went out (its deadline, 300 ms, passes meanwhile): the call gets
  // the stalled time back and its answer, 50 ms after the request, counts.
  CURL* stalled = calls.start(server.url("/stalled"), 300);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  calls.run_until_ended(stalled);
  CHECK(calls.ended[stalled] == "answered 200");
  CHECK(calls.clock->stalls() == 1);
  CHECK(calls.clock->longest_stall_ms() >= 800);

  // The request goes out, then the loop stands still past the deadline while
  // the answer arrives: it is read, not judged late.
  CURL* waiting = calls.start(server.url("/waiting"), 300);
  size_t before = server.count();
  int64_t end = dq::monotonic_ms() + 5000;
  while (server.count() == before && dq::monotonic_ms() < end) {
    event_base_loop(calls.base.get(), EVLOOP_NONBLOCK);
  }
  REQUIRE(server.count() > before);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  calls.run_until_ended(waiting);
  CHECK(calls.ended[waiting] == "answered 200");

  // No answer and no stall: late at its deadline.
  int64_t started = dq::monotonic_ms();
  CURL* silent = calls.start(server.url("/silent"), 300);
  calls.run_until_ended(silent);
  int64_t took = dq::monotonic_ms() - started;
  MESSAGE("a silent call was judged late after " << took << " ms (deadline 300 ms)");
  CHECK(calls.ended[silent] == "late");
  CHECK(took >= 300);
  CHECK(took < 2000);
}

// Small helpers of the end-to-end suites (test_promise, test_flow): topics
// with settings, job documents, counting deliveries, waiting.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/core/json.h"
#include "common/registry/registry.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/http_client.h"
#include "tests/support/sleep_ms.h"

namespace dq::test {

inline int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// {"id", "body", "delay"} as the HTTP API takes it.
inline std::string job_doc(const std::string& id, const Json& body, double delay_s) {
  return Json{{"id", id}, {"body", body}, {"delay", delay_s}}.dump();
}

// Deliveries per job id, from the X-DQ-Id header.
inline std::map<std::string, int> deliveries_by_id(const CallbackServer& callback) {
  std::map<std::string, int> count;
  for (const auto& request : callback.requests()) ++count[request.header("x-dq-id")];
  return count;
}

// Writes a topic into the host's registry before it starts.
inline void add_topic(DqdProcess& dqd, const Topic& topic) {
  Status added = dqd.registry().add_topic(topic);
  REQUIRE_MESSAGE(added.is_ok(), added.message());
}

// GET of a job that must be there (200), as JSON.
inline Json get_job(HttpClient& http, const DqdProcess& dqd, const std::string& topic,
                    const std::string& id) {
  HttpResult answer = http.get(dqd.jobs_url(topic) + "/" + id);
  REQUIRE(answer.status == 200);
  return answer.json();
}

inline void register_topic(DqdProcess& dqd, const std::string& name, const std::string& url,
                           int timeout_ms = 5000, int max_attempts = 0) {
  Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.timeout_ms = timeout_ms;
  topic.max_attempts = max_attempts;
  // Suites using this test retries and dead letters with receivers that fail
  // on purpose: the circuit breaker (tests/test_circuit_breaker.cc) is off.
  topic.circuit_breaker = false;
  add_topic(dqd, topic);
}

// One timer and one consumer on these shards: every job of a case goes
// through the same two processes, so a duplicate or a loss points at them.
inline DqdOptions one_timer_one_consumer(std::vector<std::string> shards,
                                         std::string extra_ini = "") {
  DqdOptions options;
  options.shards = std::move(shards);
  options.timers = 1;
  options.consumers = 1;
  options.extra_ini = std::move(extra_ini);
  return options;
}

// Waits until done() or timeout_ms; returns done().
template <typename Done>
bool wait_until(int timeout_ms, Done done) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (done()) return true;
    sleep_ms(20);
  }
  return done();
}

// Waits until done() or timeout_ms of real time (done() may itself take a
// while: a request, a program run); returns done().
template <typename Done>
bool wait_within(int64_t timeout_ms, Done done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    sleep_ms(20);
  }
  return done();
}

// The value below which `share` of the samples fall (0.99: p99).
inline int64_t percentile(std::vector<int64_t> samples, double share) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  size_t at = static_cast<size_t>(share * static_cast<double>(samples.size() - 1));
  return samples[at];
}

}  // namespace dq::test

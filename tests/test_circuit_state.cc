// The circuit breaker's rules (common/store/circuit_state.h) on a plain
// value, and the choice of the shard that holds shared state.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/registry/receiver.h"
#include "common/store/circuit_state.h"
#include "common/store/state_shard.h"
#include "consumer/circuit_keeper.h"

namespace dq {
namespace {

constexpr int kThreshold = 3;
constexpr int64_t kOpenMs = 1000;
constexpr int64_t kLeaseMs = 5000;

CircuitChange fail(Circuit* c, int64_t now, const std::string& who = "a") {
  return circuit_report(c, true, kThreshold, kOpenMs, "HTTP 503", who, kLeaseMs, now);
}
CircuitChange answer(Circuit* c, int64_t now, const std::string& who = "a") {
  return circuit_report(c, false, kThreshold, kOpenMs, "", who, kLeaseMs, now);
}

}  // namespace

TEST_CASE("failures in a row open the circuit once; an answer in between starts the count again") {
  Circuit c;
  CHECK(fail(&c, 100) == CircuitChange::kNone);
  CHECK(fail(&c, 110) == CircuitChange::kNone);
  CHECK(answer(&c, 120) == CircuitChange::kNone);
  CHECK(c.failures == 0);
  CHECK(fail(&c, 130) == CircuitChange::kNone);
  CHECK(fail(&c, 140) == CircuitChange::kNone);
  CHECK(circuit_allowance(c, kThreshold, "a", 140) == -1);
  CHECK(fail(&c, 150) == CircuitChange::kOpened);
  CHECK(c.phase == CircuitPhase::kOpen);
  CHECK(c.last_error == "HTTP 503");
  CHECK(c.probe_at_ms == 150 + kOpenMs);
  // Calls still in flight when it opened fail too: counted, no second opening.
  CHECK(fail(&c, 160) == CircuitChange::kNone);
  CHECK(c.failures == 4);
  CHECK(c.phase == CircuitPhase::kOpen);
  CHECK(circuit_allowance(c, kThreshold, "a", 160) == 0);
}

TEST_CASE("one probe lease at a time; it waits for the open time and expires") {
  Circuit c;
  for (int i = 0; i < kThreshold; ++i) {
    fail(&c, 0);
  }
  CHECK_FALSE(circuit_take_probe(&c, "a", kLeaseMs, kOpenMs - 1));
  CHECK(circuit_take_probe(&c, "a", kLeaseMs, kOpenMs));
  CHECK(c.phase == CircuitPhase::kHalfOpen);
  CHECK(circuit_allowance(c, kThreshold, "a", kOpenMs) == 1);
  CHECK(circuit_allowance(c, kThreshold, "b", kOpenMs) == 0);
  CHECK_FALSE(circuit_take_probe(&c, "b", kLeaseMs, kOpenMs + 10));
  CHECK(circuit_take_probe(&c, "a", kLeaseMs, kOpenMs + 10));  // renewed by its holder
  // The holder was killed: once its lease is over another process probes.
  int64_t after = kOpenMs + 10 + kLeaseMs;
  CHECK(circuit_allowance(c, kThreshold, "a", after) == 0);
  CHECK(circuit_take_probe(&c, "b", kLeaseMs, after));
  CHECK(c.holder == "b");
  CHECK(circuit_allowance(c, kThreshold, "b", after) == 1);
}

TEST_CASE("a failed probe opens it again with twice the wait, up to the most") {
  Circuit c;
  for (int i = 0; i < kThreshold; ++i) {
    fail(&c, 0);
  }
  int64_t now = 0;
  int64_t wait = kOpenMs;
  for (int round = 0; round < 12; ++round) {
    now = c.probe_at_ms;
    REQUIRE(circuit_take_probe(&c, "a", kLeaseMs, now));
    CHECK(fail(&c, now) == CircuitChange::kNone);
    wait = std::min<int64_t>(wait * 2, kMaxOpenMs);
    CHECK(c.phase == CircuitPhase::kOpen);
    CHECK(c.open_ms == wait);
    CHECK(c.probe_at_ms == now + wait);
    CHECK(c.holder.empty());
  }
  CHECK(c.open_ms == kMaxOpenMs);
}

TEST_CASE("successful probes ramp up 1, 2, 4, 8 at once, then it closes once") {
  Circuit c;
  for (int i = 0; i < kThreshold; ++i) {
    fail(&c, 0);
  }
  REQUIRE(circuit_take_probe(&c, "a", kLeaseMs, kOpenMs));
  std::vector<int> seen;
  CircuitChange change = CircuitChange::kNone;
  for (int call = 0; call < 10 && change == CircuitChange::kNone; ++call) {
    seen.push_back(circuit_allowance(c, kThreshold, "a", kOpenMs + call));
    change = answer(&c, kOpenMs + call);
  }
  CHECK(seen == std::vector<int>{1, 2, 4, 8});
  CHECK(change == CircuitChange::kClosed);
  CHECK(c.phase == CircuitPhase::kClosed);
  CHECK(c.failures == 0);
  CHECK(answer(&c, kOpenMs + 20) == CircuitChange::kNone);  // closed: nothing more to tell
  CHECK(circuit_allowance(c, kThreshold, "b", kOpenMs + 20) == -1);
}

TEST_CASE("an answer while open (a call that was in flight) moves it to half-open") {
  Circuit c;
  for (int i = 0; i < kThreshold; ++i) {
    fail(&c, 0);
  }
  CHECK(answer(&c, 10, "b") == CircuitChange::kNone);
  CHECK(c.phase == CircuitPhase::kHalfOpen);
  CHECK(c.allowed == 2);
  CHECK(c.holder.empty());
  CHECK(circuit_take_probe(&c, "a", kLeaseMs, 20));  // no holder: the first asker
  CHECK(circuit_allowance(c, kThreshold, "a", 20) == 2);
}

TEST_CASE("each topic's threshold decides whether its calls stop") {
  Circuit c;
  for (int i = 0; i < kThreshold; ++i) {
    fail(&c, 0);  // opened by a topic whose threshold is 3
  }
  CHECK(circuit_allowance(c, 3, "a", 1) == 0);
  CHECK(circuit_allowance(c, 10, "a", 1) == -1);  // a patient topic keeps calling
  for (int i = 0; i < 7; ++i) {
    circuit_report(&c, true, 10, kOpenMs, "timeout", "a", kLeaseMs, 2);
  }
  CHECK(circuit_allowance(c, 10, "a", 3) == 0);  // ... until its own threshold
}

TEST_CASE(
    "call verdicts: no answer, 5xx and 429 are the receiver's; other answers prove it alive") {
  auto verdict = [](long status, bool ok) {
    TransferResult result;
    result.http_status = status;
    result.ok = ok;
    return call_verdict(result, false);
  };
  CHECK(verdict(0, false) == CallVerdict::kReceiverFailed);
  CHECK(verdict(503, false) == CallVerdict::kReceiverFailed);
  CHECK(verdict(500, false) == CallVerdict::kReceiverFailed);
  CHECK(verdict(429, false) == CallVerdict::kReceiverFailed);
  CHECK(verdict(404, false) == CallVerdict::kAlive);
  CHECK(verdict(400, false) == CallVerdict::kAlive);
  CHECK(verdict(200, true) == CallVerdict::kAlive);
  CHECK(verdict(200, false) == CallVerdict::kAlive);  // 2xx that broke success_json
  TransferResult refused;
  CHECK(call_verdict(refused, true) == CallVerdict::kNone);
}

TEST_CASE("endpoints: their names, their receiver, and what a call says to each circuit") {
  CHECK(callback_endpoint("http://Example.com/a?b=1") == "example.com:80/a");
  CHECK(callback_endpoint("https://example.com/hooks/x#f") == "https://example.com:443/hooks/x");
  CHECK(callback_endpoint("http://127.0.0.1:8080") == "127.0.0.1:8080/");
  CHECK(callback_endpoint("http://[::1]:81/p") == "[::1]:81/p");
  CHECK(callback_endpoint("ftp://x/y") == "");
  CHECK(circuit_receiver("127.0.0.1:8080/fail") == "127.0.0.1:8080");
  CHECK(circuit_receiver("https://example.com:443/hooks/x") == "example.com:443");
  CHECK(circuit_receiver("127.0.0.1:8080") == "127.0.0.1:8080");  // a key of an older dq
  CHECK(is_endpoint_circuit("127.0.0.1:8080/fail"));
  CHECK_FALSE(is_endpoint_circuit("127.0.0.1:8080"));

  Topic topic;
  topic.dead_on = "500";
  auto notes = [&](long status, bool ok, int64_t retry_after_ms) {
    TransferResult result;
    result.http_status = status;
    result.ok = ok;
    result.retry_after_ms = retry_after_ms;
    return call_notes(result, false, topic, "h:1/p", "h:1");
  };
  CHECK(notes(0, false, -1).endpoint.verdict == CircuitVerdict::kFailed);
  CHECK(notes(0, false, -1).receiver.verdict == CircuitVerdict::kFailed);
  CHECK(notes(503, false, -1).endpoint.verdict == CircuitVerdict::kFailed);
  CHECK(notes(503, false, -1).receiver.verdict == CircuitVerdict::kAlive);
  CHECK(notes(429, false, -1).endpoint.verdict == CircuitVerdict::kFailed);
  CHECK(notes(429, false, 3000).endpoint.verdict == CircuitVerdict::kPause);
  CHECK(notes(429, false, 3000).endpoint.pause_ms == 3000);
  CHECK(notes(503, false, 0).endpoint.verdict == CircuitVerdict::kPause);
  CHECK(notes(500, false, -1).endpoint.verdict == CircuitVerdict::kAlive);  // dead_on
  CHECK(notes(404, false, -1).endpoint.verdict == CircuitVerdict::kAlive);
  CHECK(notes(200, true, -1).endpoint.verdict == CircuitVerdict::kAlive);
  topic.max_deferrals = 0;  // Retry-After not honoured: an ordinary failure
  CHECK(notes(429, false, 3000).endpoint.verdict == CircuitVerdict::kFailed);
  TransferResult refused;
  CHECK(call_notes(refused, true, topic, "h:1/p", "h:1").endpoint.verdict == CircuitVerdict::kNone);
  CHECK(call_notes(refused, true, topic, "h:1/p", "h:1").receiver.verdict == CircuitVerdict::kNone);

  Circuit c;
  circuit_pause(&c, 2000, "HTTP 429", 1000);
  CHECK(circuit_paused(c, 2999));
  CHECK_FALSE(circuit_paused(c, 3000));
  circuit_pause(&c, 100, "HTTP 429", 1500);  // a shorter pause keeps the longer one
  CHECK(c.paused_until_ms == 3000);
  CHECK(c.phase == CircuitPhase::kClosed);
  CHECK(c.failures == 0);
}

TEST_CASE("receivers and the shard that holds their state") {
  CHECK(callback_receiver("http://Example.com/a?b") == "example.com:80");
  CHECK(callback_receiver("https://example.com/a") == "example.com:443");
  CHECK(callback_receiver("http://127.0.0.1:8080/x") == "127.0.0.1:8080");
  CHECK(callback_receiver("http://[::1]:81/") == "[::1]:81");
  CHECK(callback_receiver("ftp://x") == "");
  std::vector<ShardAddress> shards = {
      {"10.0.0.1", 6379, ""}, {"10.0.0.2", 6379, ""}, {"10.0.0.3", 6379, ""}};
  // The first of the placement order, whatever the list's order.
  size_t chosen = state_shard(shards, "example.com:80");
  CHECK(chosen == shard_order(shards, "example.com:80").front());
  std::vector<ShardAddress> reversed(shards.rbegin(), shards.rend());
  CHECK(reversed[state_shard(reversed, "example.com:80")].name() == shards[chosen].name());
}

}  // namespace dq

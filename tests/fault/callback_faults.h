// CallbackFaults: tells the test callback server how each topic's callback
// URL misbehaves (500, 429, hang past the timeout, hang up, redirect, slow
// 200, a 12 s call) and records every arrival with the answer it got, so the fault suite
// can count deliveries: only a 2xx answer is a delivery.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/callback_server.h"

namespace dq::test {

enum class CallbackFault {
  none,      // 200 at once
  error500,  // 500
  busy429,   // 429
  hang,      // no answer until long past the topic's timeout
  hang_up,   // closes the connection without an answer
  redirect,  // 302 to itself (dq does not follow redirects)
  slow,      // 200, but only after most of the topic's timeout
  takes12s,  // 200 after 12 s (its topic gets a 20 s timeout: see world.cc)
  quick,     // 200 after kQuickMs: calls stay open a little while
};

const char* fault_name(CallbackFault fault);

struct Arrival {
  std::string key;  // "topic/id"
  int status = 0;   // what the callback answered; 0 for no answer at all
  int64_t arrived_ms = 0;
};

class CallbackFaults {
 public:
  // Each topic's first `faulty_attempts` arrivals per job misbehave as its
  // fault says; later ones answer 200 at once.
  explicit CallbackFaults(CallbackServer& server, int faulty_attempts = 1);

  // The callback URL to register for `topic`, which answers as `fault` says.
  std::string url_for(const std::string& topic, CallbackFault fault);
  std::vector<Arrival> arrivals() const;

  static constexpr int kHangMs = 4000;   // past any topic timeout of the suite
  static constexpr int kSlowMs = 600;    // below them
  static constexpr int kLongMs = 12000;  // takes12s: longer than the hosts' drain_timeout_ms
  static constexpr int kQuickMs = 150;   // quick: well within any topic timeout

 private:
  struct State;
  CallbackServer& server_;
  std::shared_ptr<State> state_;
};

}  // namespace dq::test

// TransferClock: the consumer's own timeouts for its callbacks, in place of
// libcurl's. libcurl checks a transfer's timeout before it reads the
// transfer's socket, so after a pause of the process (SIGSTOP, swap, a VM's
// stolen time, a long GC-like stall) it failed every call open during the
// pause as "Operation timed out", although the receiver's answer had been
// waiting in the socket all along: the job went out again and the
// receiver's circuit counted failures that never happened.
//
// The clock judges on the loop instead, with two rules:
// - Nothing is judged late before curl has read what waits on every socket
//   it holds (CurlLoop::read_every_socket): an answer that arrived within the
//   timeout is a success, however late the loop gets to it.
// - The loop's own stalls are not the receiver's time. A pulse runs every
//   kPulseMs while calls are open; when it (or a deadline) fires more than
//   kStallMs after it was due, the loop stood still that long: every socket
//   is read, and every call still open gets that much more time (a connect
//   or a request that could not be sent during the pause), but never past
//   its `latest` (the consumer passes the end of the job's lease less a
//   margin, so a call never outlives the lease that covers it).
#pragma once

#include <curl/curl.h>
#include <event2/event.h>

#include <cstdint>
#include <functional>
#include <unordered_map>

#include "common/core/event_handles.h"
#include "consumer/curl_loop.h"

namespace dq {

class TransferClock {
 public:
  // A call found late; the callee ends it (and calls end()).
  using Late = std::function<void(CURL* easy)>;

  static constexpr int64_t kPulseMs = 100;  // how often a stall is looked for while calls are open
  static constexpr int64_t kStallMs = 200;  // a pulse this much late: the loop stood still

  TransferClock(event_base* base, CurlLoop& curl, Late late);
  TransferClock(const TransferClock&) = delete;
  TransferClock& operator=(const TransferClock&) = delete;

  // deadline_ms, latest_ms: monotonic (common/core/clock.h).
  void start(CURL* easy, int64_t deadline_ms, int64_t latest_ms);
  void end(CURL* easy);
  // Stalls seen, and the longest (ms), since the process started.
  uint64_t stalls() const { return stalls_; }
  int64_t longest_stall_ms() const { return longest_stall_ms_; }

 private:
  struct Deadline {
    int64_t due_ms = 0;
    int64_t latest_ms = 0;
  };
  static void on_timer(evutil_socket_t fd, short events, void* self);
  void check();
  void arm(int64_t at_ms);

  CurlLoop& curl_;
  Late late_;
  UniqueEvent timer_;
  std::unordered_map<CURL*, Deadline> open_;
  int64_t armed_for_ms_ = -1;  // when the timer is due; -1: not armed
  int64_t earliest_ms_ = 0;    // no open call is due before this
  uint64_t stalls_ = 0;
  int64_t longest_stall_ms_ = 0;
};

}  // namespace dq

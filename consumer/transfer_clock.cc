// The consumer's timeouts, judged after a read of every socket (see
// transfer_clock.h).
#include "consumer/transfer_clock.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "common/core/clock.h"
#include "common/core/log.h"

namespace dq {

TransferClock::TransferClock(event_base* base, CurlLoop& curl, Late late)
    : curl_(curl), late_(std::move(late)) {
  timer_.reset(evtimer_new(base, &TransferClock::on_timer, this));
}

void TransferClock::start(CURL* easy, int64_t deadline_ms, int64_t latest_ms) {
  open_[easy] = Deadline{deadline_ms, std::max(deadline_ms, latest_ms)};
  int64_t now = monotonic_ms();
  if (open_.size() == 1) {
    earliest_ms_ = deadline_ms;
    arm(std::min(deadline_ms, now + kPulseMs));
    return;
  }
  earliest_ms_ = std::min(earliest_ms_, deadline_ms);
  if (deadline_ms < armed_for_ms_) {
    arm(deadline_ms);
  }
}

void TransferClock::end(CURL* easy) {
  open_.erase(easy);
  if (open_.empty()) {
    evtimer_del(timer_.get());
    armed_for_ms_ = -1;
  }
  // Otherwise the timer stays: at worst it finds nothing due and re-arms.
}

void TransferClock::arm(int64_t at_ms) {
  armed_for_ms_ = at_ms;
  int64_t wait = std::max<int64_t>(0, at_ms - monotonic_ms());
  timeval after{static_cast<time_t>(wait / 1000), static_cast<suseconds_t>((wait % 1000) * 1000)};
  evtimer_add(timer_.get(), &after);
}

void TransferClock::on_timer(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  static_cast<TransferClock*>(self)->check();
}

void TransferClock::check() {
  int64_t now = monotonic_ms();
  int64_t stood_still = armed_for_ms_ >= 0 ? now - armed_for_ms_ : 0;
  armed_for_ms_ = -1;
  bool read = false;
  if (stood_still > kStallMs) {
    // Whatever arrived meanwhile is read first (calls that ended leave
    // open_), then the time the loop lost is given back to the rest.
    curl_.read_every_socket();
    read = true;
    ++stalls_;
    longest_stall_ms_ = std::max(longest_stall_ms_, stood_still);
    for (auto& [easy, deadline] : open_) {
      deadline.due_ms =
          std::max(deadline.due_ms, std::min(deadline.due_ms + stood_still, deadline.latest_ms));
    }
    err_log().warn(
        "consumer: the loop stood still for {} ms (the process was paused or starved); answers "
        "that came meanwhile were read before any call was judged late, {} call(s) still open "
        "got the time back",
        stood_still, open_.size());
  }
  std::vector<CURL*> late;
  for (const auto& [easy, deadline] : open_) {
    if (deadline.due_ms <= now) {
      late.push_back(easy);
    }
  }
  if (!late.empty() && !read) {
    curl_.read_every_socket();  // an answer waiting in its socket is not late
  }
  for (CURL* easy : late) {
    auto it = open_.find(easy);
    if (it != open_.end() && it->second.due_ms <= now) {
      late_(easy);
    }
  }
  if (open_.empty()) {
    return;
  }
  earliest_ms_ = INT64_MAX;
  for (const auto& entry : open_) {
    earliest_ms_ = std::min(earliest_ms_, entry.second.due_ms);
  }
  arm(std::min(earliest_ms_, monotonic_ms() + kPulseMs));
}

}  // namespace dq

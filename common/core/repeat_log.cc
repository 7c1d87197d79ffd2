// Implements common/core/repeat_log.h.
#include "common/core/repeat_log.h"

#include <utility>

#include "common/core/clock.h"
#include "common/core/log.h"

namespace dq {

RepeatLog::RepeatLog(spdlog::level::level_enum level, int64_t window_ms, Sink sink)
    : level_(level), window_ms_(window_ms), sink_(std::move(sink)) {}

void RepeatLog::write(const std::string& text) {
  if (sink_) {
    sink_(level_, text);
  } else {
    err_log().log(level_, "{}", text);
  }
}

void RepeatLog::write_count(int64_t now_ms) {
  if (repeats_ == 0) {
    return;
  }
  int64_t seconds = (now_ms - window_start_ms_ + 999) / 1000;
  write(last_ + " (repeated " + std::to_string(repeats_) + " time" + (repeats_ == 1 ? "" : "s") +
        " in the last " + std::to_string(seconds) + " s)");
  repeats_ = 0;
}

bool RepeatLog::note(const std::string& text) {
  int64_t now = monotonic_ms();
  if (!active_ || text != last_) {
    write_count(now);
    write(text);
    active_ = true;
    last_ = text;
    window_start_ms_ = now;
    repeats_ = 0;
    return true;
  }
  ++repeats_;
  if (now - window_start_ms_ < window_ms_) {
    return false;
  }
  write_count(now);
  window_start_ms_ = now;
  return true;
}

bool RepeatLog::clear() {
  bool was_active = active_;
  write_count(monotonic_ms());
  active_ = false;
  last_.clear();
  return was_active;
}

}  // namespace dq

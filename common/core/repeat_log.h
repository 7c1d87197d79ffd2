// RepeatLog: how a loop logs an error it may meet over and over (a shard
// that refuses every command, a BLPOP refused at once). The first time the
// line is logged at once; while the same text keeps coming it is counted and
// logged at most once per window with the count:
//   "timer: shard 127.0.0.1:6379: ... (repeated 14000 times in the last 10 s)"
// A different text logs the count of the previous one, then itself. clear()
// ends the run (the loop works again). One per loop; not thread-safe.
#pragma once

#include <spdlog/common.h>

#include <cstdint>
#include <functional>
#include <string>

namespace dq {

class RepeatLog {
 public:
  using Sink = std::function<void(spdlog::level::level_enum, const std::string&)>;

  // `sink` nullptr: err_log() (common/core/log.h).
  explicit RepeatLog(spdlog::level::level_enum level = spdlog::level::err,
                     int64_t window_ms = 10000, Sink sink = nullptr);

  // Logs `text` now (true) or counts it (false).
  bool note(const std::string& text);
  // The error is over: logs a count not yet logged. Returns whether a run
  // was open (the caller may log "works again").
  bool clear();
  bool active() const { return active_; }

 private:
  void write(const std::string& text);
  void write_count(int64_t now_ms);

  spdlog::level::level_enum level_;
  int64_t window_ms_;
  Sink sink_;
  bool active_ = false;
  std::string last_;
  int64_t window_start_ms_ = 0;
  int64_t repeats_ = 0;  // since the last line written
};

}  // namespace dq

// The consumer's helper threads (ShardWorker, CircuitKeeper): each works on a
// thread of its own until it is stopped, and may finish what it holds until
// the stop's deadline. Members the thread shares with the delivery loop are
// guarded by mutex_; changed_ wakes the thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "common/core/clock.h"

namespace dq {

class WorkerThread {
 public:
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  // Asks the thread to stop; what it holds may take until deadline_ms
  // (monotonic_ms).
  void stop(int64_t deadline_ms) {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    stop_deadline_ms_ = deadline_ms;
    changed_.notify_all();
  }

 protected:
  WorkerThread() = default;
  ~WorkerThread() = default;

  static constexpr int kTickMs = 100;  // the longest the thread waits for work

  void start(std::function<void()> body) { thread_ = std::thread(std::move(body)); }

  // For the derived destructor, before its members go: a stop asked for
  // earlier keeps its deadline (what is still queued gets until then), else
  // the deadline is now; then waits for the thread.
  void stop_and_join() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!stopping_) {
        stopping_ = true;
        stop_deadline_ms_ = monotonic_ms();
      }
      changed_.notify_all();
    }
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  int64_t stop_deadline_ms_ = 0;

 private:
  std::thread thread_;
};

}  // namespace dq

// Per-shard BLPOP threads that wake the consumer's main loop.
#include "consumer/wake_waiter.h"

#include <chrono>

#include "common/core/log.h"
#include "common/core/repeat_log.h"
#include "common/core/stop_flag.h"
#include "common/store/job_store.h"

namespace dq {
namespace {

constexpr int kBlockMs = 1000;  // longest BLPOP; a stop is seen within it
constexpr int kRetryMs = 500;   // Redis down

}  // namespace

WakeWaiter::WakeWaiter(const Config& config, CURLM* multi)
    : config_(config), multi_(multi), pending_(config.shards.size(), 0) {
  for (size_t shard = 0; shard < config.shards.size(); ++shard) {
    threads_.emplace_back([this, shard] { wait_loop(shard); });
  }
}

WakeWaiter::~WakeWaiter() {
  stop();
  for (auto& thread : threads_) {
    thread.join();
  }
}

void WakeWaiter::stop() {
  stopping_.store(true);
  taken_.notify_all();
}

bool WakeWaiter::take(size_t shard) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_[shard]) {
    return false;
  }
  pending_[shard] = 0;
  taken_.notify_all();
  return true;
}

void WakeWaiter::wait_loop(size_t shard) {
  BlockingJobStore store(config_.shards, config_.redis_connect_timeout_ms,
                         config_.redis_command_timeout_ms);
  RepeatLog refused(spdlog::level::warn);
  while (!stopping_.load() && !stop_requested()) {
    {
      // Do not take more tokens while the last wake is still unhandled.
      std::unique_lock<std::mutex> lock(mutex_);
      taken_.wait_for(lock, std::chrono::milliseconds(kBlockMs),
                      [&] { return !pending_[shard] || stopping_.load(); });
      if (pending_[shard]) {
        continue;
      }
    }
    auto woken = store.wait_consumer_wake(shard, kBlockMs);
    if (!woken.is_ok()) {
      // Down, or refused at once (a read-only or full shard): pause, so the
      // loop does not spin; log once, then with a count.
      refused.note("consumer: wake wait on shard " + config_.shards[shard].name() + ": " +
                   woken.status().message());
      std::this_thread::sleep_for(std::chrono::milliseconds(kRetryMs));
      continue;
    }
    refused.clear();
    if (!*woken) {
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_[shard] = 1;
    }
    curl_multi_wakeup(multi_);
  }
}

}  // namespace dq

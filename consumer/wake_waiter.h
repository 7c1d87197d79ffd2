// WakeWaiter: one thread per shard blocks on the shard's consumer wake list
// (BLPOP; promote.lua pushes a token per job made ready) and wakes the
// consumer's curl_multi_poll with curl_multi_wakeup. It only listens while the
// consumer has acted on the previous wake, so a busy consumer leaves tokens
// to idle ones.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/core/config.h"

namespace dq {

class WakeWaiter {
 public:
  WakeWaiter(const Config& config, CURLM* multi);
  ~WakeWaiter();  // stops and joins the threads (within one BLPOP wait)
  WakeWaiter(const WakeWaiter&) = delete;
  WakeWaiter& operator=(const WakeWaiter&) = delete;

  // True once per wake of the shard: the consumer should try to reserve.
  bool take(size_t shard);
  void stop();

 private:
  void wait_loop(size_t shard);

  const Config& config_;
  CURLM* multi_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable taken_;
  std::vector<char> pending_;  // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace dq

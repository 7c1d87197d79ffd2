// WaitingShards: for callers that wait (dqctl, tests): a private event loop
// (common/core/loop_waiter.h) with its own connection to every shard, on
// which they run the asynchronous store operations until they answer. There
// is no blocking copy of those operations.
//
//   WaitingShards shards(config);
//   auto page = shards.wait<Result<JobPage>>(
//       [&](auto done) { list_topic_jobs(shards.set(), topic, state, 0, 50, done); });
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "common/core/config.h"
#include "common/core/loop_waiter.h"
#include "common/store/shard_set.h"

namespace dq {

class WaitingShards {
 public:
  // Connects to every shard and waits until each first connect has ended
  // (up or failed: a down shard then answers "unreachable").
  WaitingShards(const std::vector<ShardAddress>& addresses, int connect_timeout_ms,
                int command_timeout_ms)
      : shards_(std::make_unique<OwnedShards>(waiter_.base(), addresses, connect_timeout_ms,
                                              command_timeout_ms)) {
    waiter_.wait<bool>([this](const std::function<void(bool)>& done) {
      shards_->when_connected([done]() { done(true); });
    });
  }
  explicit WaitingShards(const Config& config)
      : WaitingShards(config.shards, config.redis_connect_timeout_ms,
                      config.redis_command_timeout_ms) {}

  const ShardSet& set() const { return shards_->set(); }

  // Starts the operation (start(done)) and runs the loop until it answers.
  template <typename T>
  T wait(const std::function<void(std::function<void(T)>)>& start) {
    return waiter_.wait<T>(start);
  }

 private:
  LoopWaiter waiter_;  // first: the shards' connections live on its loop
  std::unique_ptr<OwnedShards> shards_;
};

}  // namespace dq

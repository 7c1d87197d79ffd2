// WakeWaiter: per shard, a BLPOP on the shard's consumer wake list
// (promote.lua pushes a token per job made ready), on connections of its own
// (a BLPOP holds its connection), asynchronous on the consumer's loop. A
// token calls `woke`; the loop takes it (take()) when it plans its reserves.
// A shard is only listened to again once the loop has taken its last
// token, so a busy consumer leaves tokens to idle ones.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/repeat_log.h"
#include "common/store/async_job_store.h"

namespace dq {

class WakeWaiter {
 public:
  // store: one used for these waits only (its connections block).
  WakeWaiter(const Config& config, event_base* base, AsyncJobStore& store,
             std::function<void()> woke);
  WakeWaiter(const WakeWaiter&) = delete;
  WakeWaiter& operator=(const WakeWaiter&) = delete;

  // True once per wake of the shard: the consumer should try to reserve.
  bool take(size_t shard);
  // No more waits are started.
  void stop() { stopping_ = true; }

 private:
  struct Shard {
    WakeWaiter* owner = nullptr;
    size_t index = 0;
    bool pending = false;  // a token came that the loop has not taken
    bool waiting = false;  // a BLPOP (or the pause after an error) is out
    RepeatLog refused{spdlog::level::warn};
    UniqueEvent pause;  // after an error
  };
  void wait(Shard& shard);
  static void on_pause_over(evutil_socket_t fd, short events, void* shard);

  const Config& config_;
  AsyncJobStore& store_;
  std::function<void()> woke_;
  std::vector<std::unique_ptr<Shard>> shards_;
  bool stopping_ = false;
};

}  // namespace dq

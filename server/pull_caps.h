// PullCaps: a pull topic's max_in_flight and max_rate over every API server
// of every host (docs/delivery.md, "Pull workers"): the leased jobs of the
// topic are counted on its coordination shard (common/store/lua/pull_cap.lua).
// A reserve takes room before it runs and settles after; an ack or nack
// drops its lease, a touch moves its deadline, a lease that ends is no
// longer counted. An unreachable coordination shard hands out nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/registry/registry.h"
#include "common/store/async_job_store.h"

namespace dq {

class PullCaps {
 public:
  explicit PullCaps(AsyncJobStore& jobs) : jobs_(jobs) {}

  // The coordination shard's zset member of one lease.
  static std::string lease(const std::string& shard_name, const std::string& topic,
                           const std::string& id, const std::string& reserve_id);

  // How many of `want` jobs the caps allow now, and when to ask again if
  // fewer (ms; 0: none refused). Their room is held for hold_ms.
  struct Room {
    int allowed = 0;
    int64_t wait_ms = 0;
  };
  void take(const Topic& topic, const std::string& reserve_id, int want, int64_t hold_ms,
            std::function<void(Result<Room>)> done);
  // After the reserve: the holds of `allowed` go, the leases it got come in
  // (deadline lease_ms from now).
  void settle(const Topic& topic, const std::string& reserve_id, int allowed, int64_t lease_ms,
              const std::vector<std::string>& leases);
  void drop(const Topic& topic, const std::vector<std::string>& leases);
  void touch(const Topic& topic, const std::string& lease, int64_t lease_ms);

 private:
  void run(const Topic& topic, std::vector<std::string> args,
           std::function<void(Result<const redisReply*>)> done);

  AsyncJobStore& jobs_;
};

}  // namespace dq

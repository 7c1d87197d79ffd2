// ShardTracker: one shard's up/down state from a stream of check results.
// Up -> down after `down_after` failed checks in a row, down -> up after
// `up_after` good ones, so one lost PING neither pages anyone nor hides an
// outage. Each change is returned once, for exactly one alert.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/redis/shard_health.h"

namespace dq {

struct ShardChange {
  bool up = false;            // the new state
  std::string reason;         // why it is down (for up: why it was down)
  int64_t at_ms = 0;          // when the change was decided
  int64_t down_since_ms = 0;  // first failed check of the outage
};

class ShardTracker {
 public:
  // `initial` carries a state published earlier (by a checker before a
  // reload or restart), so an outage that was already alerted stays one.
  ShardTracker(CheckedShard initial, int down_after, int up_after);

  std::optional<ShardChange> record_ok(int64_t now_ms);
  std::optional<ShardChange> record_failure(const std::string& reason, int64_t now_ms);

  CheckedShard& health() { return health_; }
  const CheckedShard& health() const { return health_; }

 private:
  CheckedShard health_;
  int down_after_;
  int up_after_;
  int successes_ = 0;
  int64_t first_failure_ms_ = 0;
};

}  // namespace dq

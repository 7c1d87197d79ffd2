// Implements the up/down state machine of one shard (see shard_tracker.h).
#include "checker/shard_tracker.h"

namespace dq {

ShardTracker::ShardTracker(CheckedShard initial, int down_after, int up_after)
    : health_(std::move(initial)), down_after_(down_after), up_after_(up_after) {
  if (!health_.up) {
    first_failure_ms_ = health_.since_ms;
  }
  health_.failures = 0;
}

std::optional<ShardChange> ShardTracker::record_ok(int64_t now_ms) {
  health_.checked_at_ms = now_ms;
  health_.failures = 0;
  ++successes_;
  if (health_.up || successes_ < up_after_) {
    return std::nullopt;
  }
  ShardChange change{true, health_.reason, now_ms, health_.since_ms};
  health_.up = true;
  health_.since_ms = now_ms;
  health_.reason.clear();
  return change;
}

std::optional<ShardChange> ShardTracker::record_failure(const std::string& reason, int64_t now_ms) {
  health_.checked_at_ms = now_ms;
  successes_ = 0;
  if (health_.failures == 0) {
    first_failure_ms_ = now_ms;
  }
  ++health_.failures;
  if (!health_.up) {
    health_.reason = reason;  // the latest word on why
    return std::nullopt;
  }
  if (health_.failures < down_after_) {
    return std::nullopt;
  }
  ShardChange change{false, reason, now_ms, first_failure_ms_};
  health_.up = false;
  health_.since_ms = first_failure_ms_;
  health_.reason = reason;
  return change;
}

}  // namespace dq

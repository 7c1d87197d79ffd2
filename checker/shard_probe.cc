// Implements one shard check: PING, writes, identity, then optionally the
// safety check.
#include "checker/shard_probe.h"

#include "common/core/clock.h"
#include "common/store/shard_writable.h"

namespace dq {

ShardProbe::ShardProbe(const ShardAddress& address, int connect_timeout_ms, int timeout_ms)
    : connection_(address, connect_timeout_ms, timeout_ms), timeout_ms_(timeout_ms) {}

ProbeResult ShardProbe::probe(bool with_safety, int memory_warn_percent) {
  ProbeResult result;
  int64_t started = monotonic_ms();
  auto pong = connection_.command({"PING"});
  if (!pong.is_ok() && !connection_.connected()) {
    // A Redis that accepts connections but never answers (stopped, swapping,
    // stuck in a slow script) ends in a read timeout: say so plainly.
    bool timed_out = monotonic_ms() - started >= timeout_ms_ - 10;
    result.error = timed_out ? "no answer to PING within " + std::to_string(timeout_ms_) + " ms"
                             : pong.status().message();
    return result;
  }
  if (!pong.is_ok()) {
    // An error reply: Redis answers but refuses (MISCONF refuses even PING).
    result.error = pong.status().message();
    result.refuses_writes = pong.status().code() == Code::kUnavailable;
  } else {
    auto writes = check_shard_writable(connection_);
    if (!writes.is_ok()) {
      result.error = writes.status().message();
      connection_.disconnect();
      return result;
    }
    result.ok = writes->writable;
    result.refuses_writes = !writes->writable;
    result.error = writes->reason;
  }
  auto identity = read_identity(connection_, /*write_if_missing=*/result.ok);
  if (identity.is_ok()) {
    result.identity = std::move(*identity);
  } else if (!connection_.connected()) {
    result.ok = false;
    result.refuses_writes = false;
    result.error = identity.status().message();
    return result;
  }
  if (with_safety && connection_.connected()) {
    auto safety = check_shard_safety(connection_, memory_warn_percent);
    if (safety.is_ok()) {
      result.safety = std::move(*safety);
    }
  }
  return result;
}

}  // namespace dq

// Implements one shard check: PING, then optionally the safety check.
#include "checker/shard_probe.h"

#include "common/core/clock.h"

namespace dq {

ShardProbe::ShardProbe(const ShardAddress& address, int connect_timeout_ms, int timeout_ms)
    : connection_(address, connect_timeout_ms, timeout_ms), timeout_ms_(timeout_ms) {}

ProbeResult ShardProbe::probe(bool with_safety, int memory_warn_percent) {
  ProbeResult result;
  int64_t started = monotonic_ms();
  auto pong = connection_.command({"PING"});
  if (!pong.is_ok()) {
    // A Redis that accepts connections but never answers (stopped, swapping,
    // stuck in a slow script) ends in a read timeout: say so plainly.
    bool timed_out = monotonic_ms() - started >= timeout_ms_ - 10;
    result.error = timed_out ? "no answer to PING within " + std::to_string(timeout_ms_) + " ms"
                             : pong.status().message();
    connection_.disconnect();
    return result;
  }
  result.ok = true;
  if (with_safety) {
    auto safety = check_shard_safety(connection_, memory_warn_percent);
    if (safety.is_ok()) {
      result.safety = std::move(*safety);
    }
  }
  return result;
}

}  // namespace dq

// dq-redis-checker: the one child that watches every Redis shard and sends
// every alert. One thread pings the shards each [checker] interval_ms and
// publishes their state (common/redis/shard_health.h); the main thread turns alert
// events and shard changes into mails and webhook calls (alert_loop.h).
#pragma once

#include "common/core/config.h"

namespace dq {

// Runs until SIGTERM/SIGINT, then returns 0.
int run_checker(const Config& config, int index);

}  // namespace dq

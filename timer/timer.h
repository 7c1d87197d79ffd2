// dq-timer_N: moves due jobs from each shard's delayed set to the ready lists
// and requeues jobs whose lease expired.
#pragma once

#include "common/core/config.h"

namespace dq {

// Runs until SIGTERM/SIGINT, then returns 0.
int run_timer(const Config& config, int index);

}  // namespace dq

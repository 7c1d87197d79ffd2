// dq-consume_N: reserves ready jobs and delivers them to their topic's
// callback URL, [consumer] concurrency transfers in flight at once.
#pragma once

#include "common/core/config.h"

namespace dq {

// Runs until SIGTERM/SIGINT; then reserves nothing new, finishes (acks or
// fails) the deliveries in flight and returns 0.
int run_consumer(const Config& config, int index);

}  // namespace dq

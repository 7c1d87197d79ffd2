// RetryPolicy: when a failed delivery is tried again, and how many attempts a
// topic gets before its job is dead-lettered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq {

// Parses a topic's retry_ms ("1000,3000,5000"): positive integers, commas,
// optional spaces. Empty text gives an empty list (the default schedule).
Result<std::vector<int64_t>> parse_retry_schedule(const std::string& text);

// Delay before the next attempt after the k-th failure (k = 1, 2, ...):
// the topic's schedule entry k (its last entry repeats), or by default
// (2k-1) x backoff_unit_ms, i.e. 1, 3, 5, 7 ... units.
int64_t retry_delay_ms(const Topic& topic, int failure, int64_t backoff_unit_ms);

// topic.max_attempts, or default_max_attempts when the topic says 0.
int max_attempts(const Topic& topic, int default_max_attempts);

}  // namespace dq

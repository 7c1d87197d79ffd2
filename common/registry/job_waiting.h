// Why a ready job waits, for GET /v1/topics/{t}/jobs/{id}, the admin page's
// job lookup and `dqctl job get`: its topic's endpoint or receiver held by
// a circuit breaker (open, or paused by a Retry-After), or the topic offline.
#pragma once

#include <cstdint>

#include "common/core/json.h"
#include "common/registry/registry.h"
#include "common/store/circuit_listing.h"
#include "common/store/job.h"

namespace dq {

// {"reason", "since_ms", "detail"} or null (nothing known holds it). reason:
// "offline", "circuit_open" (the receiver's or the endpoint's circuit stops
// the topic's calls), "paused_by_retry_after" (the endpoint asked for a pause).
// Only a ready job is said to wait.
Json job_waiting(const Job& job, const Topic& topic, const CircuitListing& circuits,
                 int64_t now_ms);

// Whether job_waiting needs the circuits listed (a ready job of a topic
// with a breaker).
bool waiting_needs_circuits(const Job& job, const Topic& topic);

}  // namespace dq

// Why a ready job waits, for GET /v1/topics/{t}/jobs/{id}, the admin page's
// job lookup and `dqctl job get`: the topic offline or out of its delivery
// window, its endpoint or receiver held by a circuit breaker (open, or
// paused by a Retry-After), or its caps (max_in_flight reached, max_rate
// spent). A delayed or retrying job the timer held for the delivery window
// waits too.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/core/json.h"
#include "common/core/shard.h"
#include "common/registry/registry.h"
#include "common/store/cap_state.h"
#include "common/store/circuit_listing.h"
#include "common/store/job.h"

namespace dq {

// {"reason", "since_ms", "detail"} or null (nothing known holds it). reason,
// the first that holds: "offline", "delivery_window" (closed; or the job
// was held for it and waits its turn in the opening), "circuit_open" (the
// receiver's or the endpoint's circuit stops the topic's calls),
// "paused_by_retry_after" (the endpoint asked for a pause), "max_in_flight",
// "max_rate"; "dependencies" for a job waiting for the jobs its add named
// in "after", with "after": [{"topic", "id"}] (those not delivered yet).
Json job_waiting(const Job& job, const Topic& topic, const CircuitListing& circuits,
                 const CapState& caps, int64_t now_ms);

// Whether job_waiting needs the circuits listed (a ready job of a topic
// with a breaker), or the caps' state read (a ready job of a capped topic).
bool waiting_needs_circuits(const Job& job, const Topic& topic);
bool waiting_needs_caps(const Job& job, const Topic& topic);

// job_waiting after reading what it needs (the circuits, the caps' state on
// the topic's coordination shard among `addresses`, the shards of
// `shards` in the same order); done(waiting) on the shards' loop.
void find_job_waiting(const ShardSet& shards, const std::vector<ShardAddress>& addresses,
                      const Job& job, const Topic& topic, std::function<void(Json)> done);

}  // namespace dq

// The circuit breaker series of /metrics (docs/metrics.md), from the
// circuits every shard holds (common/store/circuit_listing.h):
//   dq_circuit_state{receiver}          0 closed, 1 half_open, 2 open
//   dq_circuit_failures{receiver}       receiver failures in a row
//   dq_circuit_since_seconds{receiver}  unix time the state began
// An endpoint's circuit (host:port/path) has the label endpoint beside
// receiver (its host:port); a receiver's circuit has receiver alone.
#pragma once

#include <string>

#include "common/store/circuit_listing.h"

namespace dq {

std::string circuit_metrics_text(const CircuitListing& listing);

}  // namespace dq

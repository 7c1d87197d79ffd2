// Every receiver's circuit breaker as the shards hold it (circuit_list.lua on
// each shard at once), for /metrics, the admin page and `dqctl circuits`.
// Asynchronous on the caller's loop (common/store/shard_set.h); waiting
// callers use WaitingShards.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/store/circuit_state.h"
#include "common/store/shard_set.h"

namespace dq {

struct ReceiverCircuit {
  // The circuit's name: a receiver "host:port", or an endpoint
  // "host:port/path" (common/registry/receiver.h)
  std::string receiver;
  Circuit circuit;
};

struct CircuitListing {
  std::vector<ReceiverCircuit> circuits;  // by receiver
  std::vector<std::string> unreachable_shards;
};

void list_circuits(const ShardSet& shards, std::function<void(CircuitListing)> done);

// {"receiver", "state", "failures", "since_ms", "opened_at_ms", "open_ms",
//  "probe_at_ms", "allowed", "last_error", "last_error_ms",
//  "kind" ("receiver" or "endpoint"), "paused_until_ms" (a Retry-After pause)}
Json circuit_to_json(const ReceiverCircuit& entry);

}  // namespace dq

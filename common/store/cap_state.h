// What a topic's caps on calls (max_in_flight, max_rate) allow right now,
// read from their state on the topic's coordination shard (permit_lease.lua
// keeps it; cap_state.lua reads it), for a ready job's waiting reason.
// Asynchronous on the caller's loop (common/store/shard_set.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/store/shard_set.h"

namespace dq {

struct CapState {
  bool known = false;  // false: the shard did not answer (nothing is said)
  // Permits the consumers' live leases count: calls open, and permits on
  // hand about to start one.
  int64_t permits = 0;
  // The rate's GCRA arrival time, ms by Redis's clock (0: no call yet or
  // the state expired), and Redis's now.
  double arrival_ms = 0;
  int64_t redis_now_ms = 0;
};

// Reads the state of `topic`'s caps on shard `index` of `shards`.
void read_cap_state(const ShardSet& shards, size_t index, const std::string& topic,
                    std::function<void(CapState)> done);

// How long until the rate gives its next call (0: it has one now), for a
// rate of `rate` per second with `burst` calls at once.
int64_t rate_wait_ms(const CapState& state, int rate, int burst);

}  // namespace dq

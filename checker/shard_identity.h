// A shard's identity: {dq}:identity holds "<random hex>:<creation ms>",
// written by dq-redis-checker the first time it finds the shard without one.
// A shard that restarts without its data (no AOF, a lost data dir) comes
// back without it; a swapped or restored one comes back with another. The
// checker remembers the identity and the jobs dq counted on the shard
// ({dq}:counts) in the shard health file, so a loss is noticed across
// checker restarts, reported once (alert, log, metrics), and the identity
// written again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/redis/redis_sync.h"
#include "common/redis/shard_health.h"

namespace dq {

struct IdentitySeen {
  std::string identity;      // as found; "" when the key is missing
  std::string written;       // written now because it was missing; "" otherwise
  int64_t counted_jobs = 0;  // the sum of {dq}:counts
};

// Reads the identity and the job count; writes a new identity (SET NX) when
// there is none and `write_if_missing` (the shard takes writes).
Result<IdentitySeen> read_identity(RedisConnection& connection, bool write_if_missing);

struct DataLoss {
  std::string before;        // the identity the checker knew
  std::string now;           // found instead ("" missing)
  int64_t counted_jobs = 0;  // jobs dq had counted on the shard before
};

// Compares what the shard holds with what `health` remembers and updates
// it. A loss is returned once; with counted_jobs > 0 it is also counted in
// health.data_lost_total and health.lost_jobs.
std::optional<DataLoss> note_identity(CheckedShard& health, const IdentitySeen& seen,
                                      int64_t now_ms);

}  // namespace dq

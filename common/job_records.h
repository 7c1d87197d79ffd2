// Reading job records from C++ (store v3: one bucket hash per key, see
// common/keys.h). While a store v2 shard is being converted (promote.lua
// moves its flat hash into buckets), a record may still be in the flat
// hash, so every read asks the bucket first and the flat hash second, in
// one round trip.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/redis_sync.h"
#include "common/status.h"

namespace dq {

// A command whose reply is the record of job_key: a string, or nil.
std::vector<std::string> record_read_argv(std::string_view job_key);

// The records of many keys in one pipeline, in order (nullopt: absent).
Result<std::vector<std::optional<std::string>>> read_records(RedisConnection& shard,
                                                             const std::vector<std::string>& keys);

}  // namespace dq

// Reading job records from C++ (store v3, common/store/keys.h): a pending job's
// record is in its bucket hash, the others (and store v2's pending ones
// until promote.lua converts them) in the flat hash. A read of a job in any
// state asks both in one round trip; a read of jobs known to be in flight
// or dead asks the flat hash alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/status.h"
#include "common/redis/redis_sync.h"

namespace dq {

// A command whose reply is the record of job_key: a string, or nil.
std::vector<std::string> record_read_argv(std::string_view job_key);

// The records of many keys in one pipeline, in order (nullopt: absent).
Result<std::vector<std::optional<std::string>>> read_records(RedisConnection& shard,
                                                             const std::vector<std::string>& keys);

// The same from the flat hash alone, in one HMGET: for jobs whose state keeps
// them there (in flight, dead).
Result<std::vector<std::optional<std::string>>> read_flat_records(
    RedisConnection& shard, const std::vector<std::string>& keys);

}  // namespace dq

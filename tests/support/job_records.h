// Reading a shard's job records in tests, whatever bucket they sit in
// (store v3: common/keys.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/keys.h"
#include "tests/support/redis_server.h"

namespace dq::test {

inline std::optional<std::string> record_of(TestRedis& redis, const std::string& job_key) {
  auto reply = redis.command({"HGET", keys::records_of(job_key), job_key});
  if (reply->type != REDIS_REPLY_STRING) return std::nullopt;
  return std::string(reply->str, reply->len);
}

// Every record of the shard: job key -> record.
inline std::map<std::string, std::string> all_records(TestRedis& redis) {
  std::map<std::string, std::string> out;
  std::string cursor = "0";
  do {
    auto scan =
        redis.command({"SCAN", cursor, "MATCH", keys::records_prefix() + "*", "COUNT", "1000"});
    cursor.assign(scan->element[0]->str, scan->element[0]->len);
    for (size_t k = 0; k < scan->element[1]->elements; ++k) {
      const redisReply* name = scan->element[1]->element[k];
      auto all = redis.command({"HGETALL", std::string(name->str, name->len)});
      for (size_t i = 0; i + 1 < all->elements; i += 2) {
        out[std::string(all->element[i]->str, all->element[i]->len)] =
            std::string(all->element[i + 1]->str, all->element[i + 1]->len);
      }
    }
  } while (cursor != "0");
  return out;
}

inline int64_t record_count(TestRedis& redis) {
  return static_cast<int64_t>(all_records(redis).size());
}

// The due index's bound for the job's bucket (nullopt: the bucket is not indexed).
inline std::optional<int64_t> due_bound_of(TestRedis& redis, const std::string& job_key) {
  auto reply =
      redis.command({"ZSCORE", keys::due_index(), std::to_string(keys::bucket_of(job_key))});
  if (reply->type != REDIS_REPLY_STRING) return std::nullopt;
  return std::stoll(std::string(reply->str, reply->len));
}

}  // namespace dq::test

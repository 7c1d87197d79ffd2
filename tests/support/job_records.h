// Reading a shard's job records in tests, wherever they sit: pending ones
// in their bucket, the others in the flat hash (store v3: common/store/keys.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/store/keys.h"
#include "tests/support/redis_server.h"

namespace dq::test {

inline std::optional<std::string> record_of(TestRedis& redis, const std::string& job_key) {
  for (const std::string& hash : {keys::flat_records(), keys::records_of(job_key)}) {
    auto reply = redis.command({"HGET", hash, job_key});
    if (reply->type == REDIS_REPLY_STRING) return std::string(reply->str, reply->len);
  }
  return std::nullopt;
}

// Every record of the shard: job key -> record. With bucketed, only those in
// buckets; with flat, only those in the flat hash; both by default.
inline std::map<std::string, std::string> all_records(TestRedis& redis, bool bucketed = true,
                                                      bool flat = true) {
  std::map<std::string, std::string> out;
  if (flat) {
    auto all = redis.command({"HGETALL", keys::flat_records()});
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
      out[std::string(all->element[i]->str, all->element[i]->len)] =
          std::string(all->element[i + 1]->str, all->element[i + 1]->len);
    }
  }
  if (!bucketed) return out;
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

// Every entry of every bucket's due zset: job key -> due.
inline std::map<std::string, int64_t> all_due_entries(TestRedis& redis) {
  std::map<std::string, int64_t> out;
  std::string cursor = "0";
  do {
    auto scan = redis.command({"SCAN", cursor, "MATCH", keys::due_prefix() + "*", "COUNT", "1000"});
    cursor.assign(scan->element[0]->str, scan->element[0]->len);
    for (size_t k = 0; k < scan->element[1]->elements; ++k) {
      const redisReply* name = scan->element[1]->element[k];
      auto all =
          redis.command({"ZRANGE", std::string(name->str, name->len), "0", "-1", "WITHSCORES"});
      for (size_t i = 0; i + 1 < all->elements; i += 2) {
        out[std::string(all->element[i]->str, all->element[i]->len)] =
            std::stoll(std::string(all->element[i + 1]->str, all->element[i + 1]->len));
      }
    }
  } while (cursor != "0");
  return out;
}

// The due index: bucket -> score.
inline std::map<uint32_t, int64_t> due_index_entries(TestRedis& redis) {
  std::map<uint32_t, int64_t> out;
  auto all = redis.command({"ZRANGE", keys::due_index(), "0", "-1", "WITHSCORES"});
  for (size_t i = 0; i + 1 < all->elements; i += 2) {
    out[static_cast<uint32_t>(
        std::stoul(std::string(all->element[i]->str, all->element[i]->len)))] =
        std::stoll(std::string(all->element[i + 1]->str, all->element[i + 1]->len));
  }
  return out;
}

// The due index's score for the job's bucket (nullopt: the bucket is not indexed).
inline std::optional<int64_t> due_bound_of(TestRedis& redis, const std::string& job_key) {
  auto reply =
      redis.command({"ZSCORE", keys::due_index(), std::to_string(keys::bucket_of(job_key))});
  if (reply->type != REDIS_REPLY_STRING) return std::nullopt;
  return std::stoll(std::string(reply->str, reply->len));
}

}  // namespace dq::test

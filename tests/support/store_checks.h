// What the store tests share (tests/test_store_*.cc): a BlockingJobStore
// over the test's redis-servers (it waits on AsyncJobStore, the one
// implementation the API server runs), and reads of Redis's own state to
// check every structure a job state lives in.
#pragma once

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/core/clock.h"
#include "common/redis/redis_sync.h"
#include "common/store/fence.h"
#include "common/store/job_meta.h"
#include "common/store/job_store.h"
#include "common/store/keys.h"
#include "common/store/placement.h"
#include "common/store/script_calls.h"
#include "tests/support/job_records.h"
#include "tests/support/redis_server.h"
#include "tests/support/sleep_ms.h"
#include "tests/support/store_reads.h"

namespace dq::test {

// ---------------------------------------------------------------- store

// The server answering on the port is the one this test started (another
// test process may have started one on the same free port at the same time).
inline void require_own_server(TestRedis& server) {
  if (!server.running()) {
    return;  // stopped on purpose
  }
  auto reply = server.command({"INFO", "server"});
  std::string info(reply->str, reply->len);
  REQUIRE_MESSAGE(
      info.find("process_id:" + std::to_string(server.pid()) + "\r") != std::string::npos,
      "port " << server.port() << " is answered by another test's redis-server");
}

// TestRedis::start on the same port, checked to be ours again: the port was
// free while it was down.
inline void restart(TestRedis& server) {
  server.start();
  require_own_server(server);
}

inline std::unique_ptr<BlockingJobStore> store_over(const std::vector<TestRedis*>& servers,
                                                    int command_timeout_ms = 2000) {
  std::vector<ShardAddress> shards;
  for (TestRedis* server : servers) {
    require_own_server(*server);
    shards.push_back(server->shard());
  }
  return std::make_unique<BlockingJobStore>(shards, 300, command_timeout_ms);
}

// A store whose shards have the roles given (common/store/placement.h), in
// the order of `servers`; absent: active.
inline std::unique_ptr<BlockingJobStore> store_with_roles(const std::vector<TestRedis*>& servers,
                                                          const std::vector<ShardRole>& roles) {
  Config config;
  for (size_t i = 0; i < servers.size(); ++i) {
    require_own_server(*servers[i]);
    config.shards.push_back(servers[i]->shard());
    if (i < roles.size() && roles[i] != ShardRole::kActive) {
      config.shard_roles[servers[i]->shard().name()] = roles[i];
    }
  }
  config.redis_connect_timeout_ms = 300;
  config.redis_command_timeout_ms = 2000;
  config.redis_probe_timeout_ms = 2000;
  return std::make_unique<BlockingJobStore>(config);
}

// Refused before anything was written (503): the id's home, or its other
// home, is down or refused the write, and the message names it.
inline bool refused_naming(const Result<Added>& added, const std::string& shard) {
  return !added.is_ok() && added.status().code() == Code::kUnavailable &&
         added.status().message().find(shard) != std::string::npos;
}

inline DueTime in_ms(int64_t ms) { return {true, ms}; }   // relative to Redis's now
inline DueTime at_ms(int64_t ms) { return {false, ms}; }  // absolute, Redis's clock
inline const DueTime kNow = in_ms(0);

inline ReserveSlot slot(const std::string& topic, int64_t lease_ms, int share = 10, int cap = 10,
                        int max_attempts = 5) {
  return {topic, lease_ms, share, cap, max_attempts};
}

inline Result<AckOutcome> ack(BlockingJobStore& store, size_t shard, const std::string& topic,
                              const std::string& id, const Lease& lease) {
  auto outcomes = store.ack_all(shard, {{topic, id, lease}});
  REQUIRE(outcomes.size() == 1);
  return outcomes[0];
}

// Promotes what is due on `shard`, then reserves exactly one job of `topic`.
inline ReservedJob reserve_one(BlockingJobStore& store, const std::string& topic, int64_t lease_ms,
                               const std::string& reserve_id, int max_attempts = 5,
                               size_t shard = 0) {
  REQUIRE(store.promote(shard, 100).is_ok());
  auto batch =
      store.reserve(shard, reserve_id, {slot(topic, lease_ms, 1, 1, max_attempts)}, 1, 1 << 20);
  REQUIRE(batch.is_ok());
  REQUIRE(batch->jobs.size() == 1);
  return batch->jobs.front();
}

// A job id whose home (first in placement order) is shard `home`.
inline std::string id_homed_on(const BlockingJobStore& store, const std::string& topic, size_t home,
                               const std::string& prefix) {
  for (int i = 0; i < 10000; ++i) {
    std::string id = prefix + std::to_string(i);
    if (shard_order(store.addresses(), job_key(topic, id)).front() == home) {
      return id;
    }
  }
  FAIL("no id homed on shard " << home);
  return {};
}

// ---------------------------------------------------------------- redis

inline std::string text(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    return std::string(reply->str, reply->len);
  }
  if (reply->type == REDIS_REPLY_INTEGER) {
    return std::to_string(reply->integer);
  }
  return {};
}

// Redis's clock, ms (TIME).
inline int64_t redis_time_ms(TestRedis& redis) {
  auto reply = redis.command({"TIME"});
  REQUIRE(reply->type == REDIS_REPLY_ARRAY);
  REQUIRE(reply->elements == 2);
  return std::stoll(text(reply->element[0])) * 1000 + std::stoll(text(reply->element[1])) / 1000;
}

inline int64_t integer(TestRedis& redis, const std::vector<std::string>& argv) {
  return redis.command(argv)->integer;
}
inline int64_t llen(TestRedis& redis, const std::string& key) {
  return integer(redis, {"LLEN", key});
}
inline int64_t zcard(TestRedis& redis, const std::string& key) {
  return integer(redis, {"ZCARD", key});
}
inline int64_t hlen(TestRedis& redis, const std::string& key) {
  return integer(redis, {"HLEN", key});
}
// Leases in {dq}:working: its members but the anchor (scored +inf, never a
// job; the prelude's kWorkingAnchor), which stays once a reserve wrote it.
inline int64_t leased_count(TestRedis& redis) {
  CHECK(integer(redis, {"ZCOUNT", keys::working(), "+inf", "+inf"}) <= 1);
  return integer(redis, {"ZCOUNT", keys::working(), "-inf", "(+inf"});
}

inline std::optional<std::string> hget(TestRedis& redis, const std::string& key,
                                       const std::string& field) {
  auto reply = redis.command({"HGET", key, field});
  if (reply->type == REDIS_REPLY_NIL) {
    return std::nullopt;
  }
  return text(reply.get());
}

inline std::optional<int64_t> zscore(TestRedis& redis, const std::string& key,
                                     const std::string& member) {
  auto reply = redis.command({"ZSCORE", key, member});
  if (reply->type == REDIS_REPLY_NIL) {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::stod(text(reply.get())));
}

inline std::vector<std::string> lrange(TestRedis& redis, const std::string& key) {
  auto reply = redis.command({"LRANGE", key, "0", "-1"});
  std::vector<std::string> out;
  for (size_t i = 0; i < reply->elements; ++i) {
    out.push_back(text(reply->element[i]));
  }
  return out;
}

inline std::string stats_key() { return keys::stats(day_of(now_ms())); }

inline int64_t stat(TestRedis& redis, const std::string& field) {
  auto value = hget(redis, stats_key(), field);
  return value ? std::stoll(*value) : 0;
}

// TTL of today's stats hash: -2 missing, -1 no TTL.
inline int64_t stats_ttl(TestRedis& redis) { return integer(redis, {"TTL", stats_key()}); }

// {dq}:counts without the zero entries: "topic:state" -> jobs.
inline std::map<std::string, int64_t> counts(TestRedis& redis) {
  auto reply = redis.command({"HGETALL", keys::counts()});
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i + 1 < reply->elements; i += 2) {
    int64_t n = std::stoll(text(reply->element[i + 1]));
    if (n != 0) {
      out[text(reply->element[i])] = n;
    }
  }
  return out;
}

// The same tally, made from the job records themselves.
inline std::map<std::string, int64_t> counts_from_records(TestRedis& redis) {
  std::map<std::string, int64_t> out;
  for (const auto& [key, record] : all_records(redis)) {
    out[key.substr(0, key.find(':')) + ":" + record.substr(0, 1)]++;
  }
  return out;
}

// Delayed and retrying jobs, counted from their records.
inline int64_t delayed_count(TestRedis& redis) {
  int64_t n = 0;
  for (const auto& [key, record] : all_records(redis)) {
    n += record[0] == 'd' || record[0] == 'y';
  }
  return n;
}

// Counts agree with the records, and every record sits in the structure its
// state keeps it in (and nowhere else), with its body: inline when it is
// small, else in {dq}:bodies, never both. Delayed and retrying jobs are in
// their bucket's due zset at their due, nothing else is, and the due index
// scores each bucket with its zset's earliest due exactly.
inline void check_consistent(TestRedis& redis) {
  CHECK(counts(redis) == counts_from_records(redis));
  const std::map<std::string, int64_t> due_entries = dq::test::all_due_entries(redis);
  int64_t delayed = 0, working = 0;
  int64_t apart = 0;
  std::map<std::string, int64_t> ready, dead;
  for (const auto& [key, record] : all_records(redis)) {
    std::string topic = key.substr(0, key.find(':'));
    Job job;
    std::string lease;
    REQUIRE(parse_job_meta(record, &job, &lease));
    CHECK(hget(redis, keys::bodies(), key).has_value() != body_is_inline(record));
    if (body_is_inline(record)) {
      CHECK(job.body.size() <= kInlineBodyBytes);
    } else {
      ++apart;
    }
    if (job.state == JobState::kDelayed || job.state == JobState::kRetrying) {
      auto due = due_entries.find(key);
      CHECK(due != due_entries.end());
      if (due != due_entries.end()) {
        CHECK(due->second == job.due_at_ms);
      }
      auto bound = due_bound_of(redis, key);
      CHECK(bound.has_value());
      if (bound) {
        CHECK(*bound <= job.due_at_ms);
      }
    }
    CHECK(zscore(redis, keys::working(), key).has_value() == (job.state == JobState::kWorking));
    CHECK(zscore(redis, keys::dead(topic), key).has_value() == (job.state == JobState::kDead));
    // A pending job has no lease, or 'window': promote.lua held it for its
    // topic's delivery window (a ready one keeps the mark until leased).
    const bool pending = job.state == JobState::kDelayed || job.state == JobState::kRetrying ||
                         job.state == JobState::kReady;
    if (job.state == JobState::kWorking) {
      CHECK(!lease.empty());
      CHECK(lease != "window");
    } else {
      CHECK((lease.empty() || (pending && lease == "window")));
    }
    delayed += job.state == JobState::kDelayed || job.state == JobState::kRetrying;
    working += job.state == JobState::kWorking;
    ready[topic] += job.state == JobState::kReady;
    dead[topic] += job.state == JobState::kDead;
  }
  CHECK(delayed_count(redis) == delayed);
  CHECK(static_cast<int64_t>(due_entries.size()) == delayed);
  // Pending records in their buckets, the others flat; none in both.
  for (const auto& [key, record] : dq::test::all_records(redis, true, false)) {
    CHECK((record[0] == 'd' || record[0] == 'y'));
  }
  for (const auto& [key, record] : dq::test::all_records(redis, false, true)) {
    CHECK_FALSE((record[0] == 'd' || record[0] == 'y'));
  }
  CHECK(dq::test::all_records(redis, true, false).size() +
            dq::test::all_records(redis, false, true).size() ==
        all_records(redis).size());
  std::map<uint32_t, int64_t> earliest;
  for (const auto& [key, due] : due_entries) {
    uint32_t bucket = keys::bucket_of(key);
    if (!earliest.count(bucket) || due < earliest[bucket]) {
      earliest[bucket] = due;
    }
  }
  CHECK(dq::test::due_index_entries(redis) == earliest);
  CHECK(leased_count(redis) == working);
  for (const auto& [topic, n] : ready) {
    CHECK(llen(redis, keys::ready(topic)) == n);
  }
  for (const auto& [topic, n] : dead) {
    CHECK(zcard(redis, keys::dead(topic)) == n);
  }
  CHECK(hlen(redis, keys::bodies()) == apart);
}

// Keyspace events on {dq}:bodies, read on a subscribed connection up to a
// fence message: what touched the bodies hash between two points.
class BodyWatch {
 public:
  explicit BodyWatch(TestRedis& redis) : redis_(redis) {
    redis.command({"CONFIG", "SET", "notify-keyspace-events", "KA"});
    timeval timeout{5, 0};
    context_ = redisConnectWithTimeout("127.0.0.1", redis.port(), timeout);
    REQUIRE(context_ != nullptr);
    REQUIRE(context_->err == 0);
    redisSetTimeout(context_, timeout);
    redisAppendCommand(context_, "SUBSCRIBE %s %s", ("__keyspace@0__:" + keys::bodies()).c_str(),
                       kFence);
    for (int i = 0; i < 2; ++i) {
      void* raw = nullptr;
      REQUIRE(redisGetReply(context_, &raw) == REDIS_OK);
      freeReplyObject(raw);
    }
  }
  ~BodyWatch() { redisFree(context_); }

  // Events ("hset", "hdel", ...) since the last call.
  std::vector<std::string> events() {
    redis_.command({"PUBLISH", kFence, "x"});
    std::vector<std::string> out;
    while (true) {
      void* raw = nullptr;
      REQUIRE(redisGetReply(context_, &raw) == REDIS_OK);
      ReplyPtr reply(static_cast<redisReply*>(raw));
      REQUIRE(reply->type == REDIS_REPLY_ARRAY);
      REQUIRE(reply->elements == 3);
      if (text(reply->element[1]) == kFence) {
        return out;
      }
      out.push_back(text(reply->element[2]));
    }
  }

 private:
  static constexpr const char* kFence = "dq-test-fence";
  TestRedis& redis_;
  redisContext* context_ = nullptr;
};

}  // namespace dq::test

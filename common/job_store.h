// JobStore: the blocking face of the job store over all shards. Every state
// change is one Lua script (common/lua/*.lua, built by script_calls.h).
//
// Placement: shard_order() ranks shards for a (topic, id); the job lives on
// the first healthy one. Lookups (get, del) try every shard in that order, so
// a job stays reachable after shards are added. One JobStore per thread:
// it holds one blocking connection per shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/job.h"
#include "common/redis_sync.h"
#include "common/script_calls.h"
#include "common/status.h"

namespace dq {

struct ReservedJob {
  size_t shard = 0;
  Job job;  // attempts is the number of this attempt (1 for the first)
};

struct PromoteResult {
  int moved = 0;
  std::optional<int64_t> next_due_ms;  // earliest job still delayed
};

enum class FailOutcome { kRescheduled, kDead, kStale };

struct DeadJob {
  Job job;  // state kDead, with last_error
};

class JobStore {
 public:
  JobStore(const std::vector<ShardAddress>& shards, int connect_timeout_ms, int command_timeout_ms);
  explicit JobStore(const Config& config);

  size_t shard_count() const { return shards_.size(); }
  RedisConnection& shard(size_t index) { return shards_[index]; }

  // --- producer side (dqctl, tests; the API server does the same async) ---
  // kConflict when (topic, id) is already held on any reachable shard;
  // kUnavailable when no shard can take it. Returns the shard used.
  Result<size_t> add(const std::string& topic, const std::string& id, const std::string& body,
                     int64_t due_ms);
  // kNotFound when no shard holds it; kUnavailable when it is on no reachable
  // shard but some shard is down (it may be there).
  Result<Job> get(const std::string& topic, const std::string& id);
  Status del(const std::string& topic, const std::string& id);

  // --- timer side, per shard ---
  Result<PromoteResult> promote(size_t shard, int64_t now_ms, int limit);
  Result<int> requeue_expired(size_t shard, int64_t now_ms, int limit);
  // Blocks up to timeout_ms for a wake token; true when one came.
  Result<bool> wait_timer_wake(size_t shard, int timeout_ms);

  // --- consumer side, per shard ---
  Result<std::vector<ReservedJob>> reserve(size_t shard, int64_t now_ms,
                                           const std::vector<ReserveSlot>& slots);
  Result<bool> wait_consumer_wake(size_t shard, int timeout_ms);
  Status ack(size_t shard, const std::string& topic, const std::string& id);
  // Acks many jobs in one round trip; one Status per (topic, id), in order.
  std::vector<Status> ack_all(size_t shard,
                              const std::vector<std::pair<std::string, std::string>>& jobs);
  Result<FailOutcome> fail(size_t shard, const std::string& topic, const std::string& id,
                           int attempt, int64_t retry_delay_ms, int max_attempts,
                           const std::string& error);

  // --- dead letters, over all shards ---
  Result<std::vector<DeadJob>> dead_list(const std::string& topic, size_t offset, size_t count);
  // id empty: requeue every dead job of the topic. Returns how many.
  Result<int64_t> dead_requeue(const std::string& topic, const std::string& id);
  Result<int64_t> dead_purge(const std::string& topic);
  Result<int64_t> dead_count(const std::string& topic);

 private:
  std::vector<size_t> order_for(const std::string& job_key) const;
  Result<bool> wait_wake(size_t shard, const std::string& list, int timeout_ms);
  Status ack_status(size_t shard, const Result<ReplyPtr>& reply, const std::string& topic,
                    const std::string& id);

  std::vector<RedisConnection> shards_;
};

}  // namespace dq

// JobStore: the blocking face of the job store over all shards. Every state
// change is one Lua script (common/store/lua/*.lua, built by script_calls.h).
//
// Placement and the one-copy-per-id rules are in common/placement.h: the job
// lives on the first reachable shard of shard_order(); lookups try every
// shard. One JobStore per thread: it holds one blocking connection per shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/redis/redis_sync.h"
#include "common/store/job.h"
#include "common/store/placement.h"
#include "common/store/script_calls.h"

namespace dq {

struct ReservedJob {
  size_t shard = 0;
  Job job;  // attempts is the number of this attempt (1 for the first)
  Lease lease;
};

struct ReserveBatch {
  std::vector<ReservedJob> jobs;
  int64_t ready_left = 0;  // jobs still ready in the topics asked for
};

struct PromoteResult {
  int moved = 0;
  std::optional<int64_t> next_due_ms;  // earliest job still delayed
  int64_t redis_now_ms = 0;            // Redis's clock when it ran
};

struct ExpiredResult {
  int requeued = 0;
  // "topic:id" and attempts of the jobs dead-lettered on this pass
  std::vector<std::pair<std::string, int>> dead;
};

enum class FailOutcome { kRescheduled, kDead, kStale };
enum class AckOutcome { kAcked, kAckedLate, kGone };

struct DeadJob {
  Job job;  // state kDead, with last_error
};

// A copy held on a shard until another shard is asked (see placement.h).
struct HeldCopy {
  std::string key;
  std::string incarnation;
  int64_t created_ms = 0;  // by its shard's clock
};

class JobStore {
 public:
  JobStore(const std::vector<ShardAddress>& shards, int connect_timeout_ms, int command_timeout_ms);
  explicit JobStore(const Config& config);

  size_t shard_count() const { return shards_.size(); }
  RedisConnection& shard(size_t index) { return shards_[index]; }
  const std::vector<ShardAddress>& addresses() const { return addresses_; }

  // --- producer side (dqctl, tests; the API server does the same async) ---
  // kConflict: held already with another body (or dead); existing: the same
  // body was held already (a retry). kUnavailable: no shard can take it
  // (nothing written). kUnknown: sent, no answer: it may exist now.
  // kTimeout: stored, but fewer than [redis] wait_replicas confirmed it.
  Result<Added> add(const std::string& topic, const std::string& id, const std::string& body,
                    DueTime due);
  // kNotFound when no shard holds it; kUnavailable when it is on no reachable
  // shard but some shard is down (it may be there).
  Result<Job> get(const std::string& topic, const std::string& id);
  Status del(const std::string& topic, const std::string& id);

  // --- timer side, per shard ---
  Result<PromoteResult> promote(size_t shard, int limit);
  Result<ExpiredResult> requeue_expired(size_t shard, int limit);
  // Blocks up to timeout_ms for a wake token; true when one came.
  Result<bool> wait_timer_wake(size_t shard, int timeout_ms);
  // Copies on `shard` held until shard `against` is asked, at most `limit`.
  Result<std::vector<HeldCopy>> held_copies(size_t shard, const std::string& against, int limit);

  // --- consumer side, per shard ---
  // forget_id: an earlier reserve whose reply arrived (its lease list goes).
  Result<ReserveBatch> reserve(size_t shard, const std::string& reserve_id,
                               const std::vector<ReserveSlot>& slots, int most_jobs,
                               int64_t most_bytes, const std::string& forget_id = "");
  // Drops the lease list of a reserve whose reply arrived (release.lua needs
  // it only while a reply may be lost; it expires on its own too).
  Status forget_reserve(size_t shard, const std::string& reserve_id);
  // Undoes a reserve whose reply never came; returns how many jobs went back.
  Result<int> release(size_t shard, const std::string& reserve_id);
  Result<bool> wait_consumer_wake(size_t shard, int timeout_ms);
  // Views of the caller's strings (no copies per job), valid for the call.
  struct AckRequest {
    std::string_view topic;
    std::string_view id;
    const Lease& lease;
  };
  // Acks many jobs in one script run (ack.lua); one result per request, in
  // order. A failed call fails every request with the same status.
  std::vector<Result<AckOutcome>> ack_all(size_t shard, const std::vector<AckRequest>& acks);
  Result<FailOutcome> fail(size_t shard, const std::string& topic, const std::string& id,
                           const Lease& lease, int64_t retry_delay_ms, int max_attempts,
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
  // A job as its record (common/job_meta.h) shows it.
  struct StoredJob {
    Job job;           // the body filled in when body_inline
    bool body_inline;  // else the body is in {dq}:bodies
  };
  // HGET of the job's record on one shard: nullopt when absent.
  Result<std::optional<StoredJob>> read_record(size_t shard, const std::string& topic,
                                               const std::string& id);
  // The job's body: from its record, or read from {dq}:bodies (nullopt: none).
  Result<std::optional<std::string>> read_body(size_t shard, const StoredJob& stored);

  // [redis] wait_replicas / wait_timeout_ms (common/replica_wait.h); 0: off.
  Status confirm_replicas(size_t shard);

  std::vector<ShardAddress> addresses_;
  std::vector<RedisConnection> shards_;
  std::vector<bool> upgraded_;  // per shard: its store is current (store_upgrade.h)
  int wait_replicas_ = 0;
  int wait_timeout_ms_ = 0;
};

}  // namespace dq

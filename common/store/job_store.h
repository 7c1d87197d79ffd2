// BlockingJobStore: the job operations of AsyncJobStore
// (common/store/async_job_store.h) as blocking calls, for callers that want
// to wait: dqctl, tests, admin. Each call starts the one asynchronous implementation (the code
// the API server serves requests with) on a private event loop and runs that
// loop until it answers (common/core/loop_waiter.h), so the rules and error
// answers are the same everywhere. A shard is connected when a call first
// uses it, and again on a call while it is down.
//
// shard(i) is a blocking connection of its own, for the checker's mover and
// the store upgrade (common/store/job_mover.h).
//
// One BlockingJobStore per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/redis/redis_sync.h"
#include "common/store/async_job_store.h"
#include "common/store/job.h"
#include "common/store/job_results.h"
#include "common/store/placement.h"
#include "common/store/script_calls.h"

namespace dq {

class LoopWaiter;

class BlockingJobStore {
 public:
  BlockingJobStore(const std::vector<ShardAddress>& shards, int connect_timeout_ms,
                   int command_timeout_ms);
  explicit BlockingJobStore(const Config& config);
  ~BlockingJobStore();
  BlockingJobStore(const BlockingJobStore&) = delete;
  BlockingJobStore& operator=(const BlockingJobStore&) = delete;

  size_t shard_count() const { return addresses_.size(); }
  RedisConnection& shard(size_t index) { return shards_[index]; }
  const std::vector<ShardAddress>& addresses() const { return addresses_; }

  // --- producer side: AsyncJobStore::add, get, del ---
  // kConflict: pending already with another body (or dead); existing: the
  // same body was pending already (a retry). kUnavailable: its home cannot
  // take it (nothing written). kUnknown: sent, no answer: it may exist now.
  // kTimeout: stored, but fewer than [redis] wait_replicas confirmed it.
  Result<Added> add(const std::string& topic, const std::string& id, const std::string& body,
                    DueTime due, JobExpiry expiry = {});
  // kNotFound when its home does not hold it; kUnavailable when its home
  // (or other home) is down (it may be there).
  Result<Job> get(const std::string& topic, const std::string& id);
  // A gone job's final state, while its topic's history keeps it.
  std::optional<EndedJob> get_ended(const std::string& topic, const std::string& id);
  // kUnknown (504) when a copy's delete got no reply.
  Status del(const std::string& topic, const std::string& id, int64_t keep_ms = 0);
  // See AsyncJobStore::run_now.
  Result<RunNow> run_now(const std::string& topic, const std::string& id);
  // See AsyncJobStore::update.
  Result<Updated> update(UpdateRequest request);

  // --- timer side, per shard ---
  Result<PromoteResult> promote(size_t shard, int limit, const std::vector<WindowHold>& holds = {});
  Result<ExpiredResult> requeue_expired(size_t shard, int limit,
                                        const std::vector<ExpiryTopic>& topics = {},
                                        const EndMemory& default_memory = {});
  // Blocks up to timeout_ms for a wake token; true when one came.
  Result<bool> wait_timer_wake(size_t shard, int timeout_ms);

  // --- consumer side, per shard ---
  Result<ReserveBatch> reserve(size_t shard, const std::string& reserve_id,
                               const std::vector<ReserveSlot>& slots, int most_jobs,
                               int64_t most_bytes, const std::string& forget_id = "");
  Status forget_reserve(size_t shard, const std::string& reserve_id);
  Result<int> release(size_t shard, const std::string& reserve_id);
  Result<bool> wait_consumer_wake(size_t shard, int timeout_ms);
  using AckRequest = dq::AckRequest;
  std::vector<Result<AckOutcome>> ack_all(size_t shard, const std::vector<AckRequest>& acks);
  Result<FailOutcome> fail(size_t shard, const std::string& topic, const std::string& id,
                           const Lease& lease, int64_t retry_delay_ms, int max_attempts,
                           const std::string& error, const FailDeferral& deferral = {});

  // Dead letters, listings and stats: the asynchronous operations of
  // common/store/dead_letters.h, job_listing.h, topic_stats.h, topic_jobs.h.

 private:
  // Connects `shard` (every shard: all) when it is not up, and waits until
  // that connect has ended, up or not.
  void connect(size_t shard);
  void connect_all();
  // Starts an operation of async_ and runs the loop until it answers.
  template <typename T>
  T wait(const std::function<void(std::function<void(T)>)>& start);
  // Runs the loop until `shard`'s connect has ended.
  void wait_connected(size_t shard);

  std::vector<ShardAddress> addresses_;
  std::vector<RedisConnection> shards_;  // shard(i): blocking connections, opened on use
  std::unique_ptr<LoopWaiter> waiter_;   // declared before async_: outlives it
  AsyncJobStore async_;
  std::vector<bool> started_;   // per shard: async_.start(shard) called
  std::vector<bool> upgraded_;  // per shard: its store is current (store_upgrade.h)
};

// The name tools and tests use for the store they wait on.
using JobStore = BlockingJobStore;

}  // namespace dq

// AsyncJobStore: THE implementation of every job operation over all shards
// (adds, gets, deletes; the timer's and consumer's lease and delivery calls),
// asynchronous on one event loop. The API server serves requests with it and
// the timer and consumer call it on their loops; callers that want to wait
// (dqctl, tests, admin) run the same code through BlockingJobStore
// (common/store/job_store.h), which waits on a private loop (LoopWaiter).
//
// Each state change is one Lua script (common/store/lua/*.lua, built by
// common/store/script_calls.h), over one AsyncShard per shard. The placement
// rule is common/store/placement.h: an add, get or delete asks the id's home
// alone (and, while one shard joins or drains, one more shard); a home that
// cannot be asked is a 503 naming it, nothing written.
#pragma once

#include <event2/event.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/redis/async_shard.h"
#include "common/redis/shard_health.h"
#include "common/store/add_batcher.h"
#include "common/store/add_request.h"
#include "common/store/ended_job.h"
#include "common/store/job.h"
#include "common/store/job_results.h"
#include "common/store/placement.h"
#include "common/store/replica_confirm.h"

namespace dq {

struct ShardHealth {
  std::string name;
  bool up = false;
  std::string error;  // why it is down
  // A Sentinel-managed shard's primary as last resolved ("host:port"); "" otherwise.
  std::string primary;
};

class AsyncJobStore {
 public:
  AsyncJobStore(event_base* base, const Config& config);

  void start();  // connects every shard
  // Connects one shard (again, when it is down and not connecting): a
  // blocking caller connects only the shards it uses, when it uses them.
  void start(size_t shard);
  bool connecting(size_t shard) const;
  size_t shard_count() const { return shards_.size(); }
  const std::vector<ShardAddress>& addresses() const { return addresses_; }
  // Fails every command still waiting (their callbacks run now, while the
  // HTTP and legacy servers that own the requests still exist) and refuses
  // new ones. Call before destroying those servers.
  void shutdown();

  // kConflict: pending with another body (or dead). kUnavailable: its home
  // (or other home) is down or refused the write, named in the message;
  // nothing was written. kUnknown: sent, no answer (504: a retry is safe). kTimeout:
  // stored on the primary, fewer than [redis] wait_replicas confirmed it
  // (504 replication_timeout: a retry is safe).
  // `done` gets the request back, so a caller need not keep a copy of it.
  using AddDone = std::function<void(const AddRequest& request, Result<Added> added)>;
  void add(AddRequest request, AddDone done);
  // kNotFound, or kUnavailable when not found and its home (or other home)
  // is down, named in the message.
  void get(const std::string& topic, const std::string& id, std::function<void(Result<Job>)> done);
  // A gone job's final state from its ended record on its home, or, while
  // a shard joins or drains, the later of those on its two homes (nullopt:
  // none kept, or no shard holding it could be asked).
  void get_ended(const std::string& topic, const std::string& id,
                 std::function<void(std::optional<EndedJob>)> done);
  // kUnavailable when its home (or other home) is down and the job was not
  // found elsewhere: nothing was deleted. A delete that got no reply may
  // have run: kUnknown (504); the delete is safe to retry.
  // in_flight: a copy deleted was being delivered; its callback is not stopped.
  using DelDone = std::function<void(const Status& status, bool in_flight)>;
  // keep_ms: the topic's history (EndMemory::keep_ms): the delete is
  // remembered that long, so GET answers "deleted"; 0 remembers nothing.
  void del(const std::string& topic, const std::string& id, DelDone done, int64_t keep_ms = 0);
  // Makes a delayed or retrying job due at Redis's now (attempts kept):
  // moved true. A ready or working job is due already (moved false);
  // kConflict for a dead letter (requeue it), kNotFound, and kUnavailable /
  // kUnknown as for a delete.
  void run_now(const std::string& topic, const std::string& id,
               std::function<void(Result<RunNow>)> done);
  // Changes a pending job in place (update.lua): a new version, delayed, its
  // answer of an older delivery ignored. Not found anywhere: an add of
  // request.body at request.add_due (created true; kInvalid without a body).
  // kConflict for a dead letter; kUnavailable (nothing changed) when a shard
  // that may hold it is down or the job is being moved; kUnknown as for a
  // delete.
  void update(UpdateRequest request, std::function<void(Result<Updated>)> done);

  // --- the timer's calls, per shard ---
  // holds: the topics whose delivery window is closed (promote.lua).
  // pull_topics: those whose long polls are woken when their jobs become
  // ready (PUBLISH {dq}:ready; docs/delivery.md, "Pull workers").
  void promote(size_t shard, int limit, std::function<void(Result<PromoteResult>)> done,
               const std::vector<WindowHold>& holds = {},
               const std::vector<std::string>& pull_topics = {});
  // topics, default_memory: see requeue_expired_call (common/store/script_calls.h).
  void requeue_expired(size_t shard, int limit, std::function<void(Result<ExpiredResult>)> done,
                       const std::vector<ExpiryTopic>& topics = {},
                       const EndMemory& default_memory = {},
                       const std::vector<std::string>& pull_topics = {});
  // BLPOP on the wake list for up to timeout_ms (<= 0: only takes a token
  // already there); true when a token came. The command has its own
  // timeout (timeout_ms + the command timeout), so it is not failed early.
  void wait_wake(size_t shard, WakeList list, int timeout_ms,
                 std::function<void(Result<bool>)> done);

  // --- the consumer's calls, per shard ---
  // forget_id: an earlier reserve whose reply arrived (its lease list goes).
  void reserve(size_t shard, const std::string& reserve_id, const std::vector<ReserveSlot>& slots,
               int most_jobs, int64_t most_bytes, const std::string& forget_id,
               std::function<void(Result<ReserveBatch>)> done);
  // Drops the lease list of a reserve whose reply arrived (release.lua needs
  // it only while a reply may be lost; it expires on its own too).
  void forget_reserve(size_t shard, const std::string& reserve_id,
                      std::function<void(Status)> done);
  // Undoes a reserve whose reply never came: how many jobs went back.
  // pull_topics: those among them whose long polls are woken ({dq}:ready).
  void release(size_t shard, const std::string& reserve_id, std::function<void(Result<int>)> done,
               const std::vector<std::string>& pull_topics = {});
  // A pull worker extends its lease to lease_ms from Redis's now
  // (touch.lua): the lease's new end, or nullopt when the lease is not
  // the job's current one (stale: nothing changed).
  void touch(size_t shard, const std::string& topic, const std::string& id, const Lease& lease,
             int64_t lease_ms, std::function<void(Result<std::optional<int64_t>>)> done);
  // The shard of this name in config order, or nullopt.
  std::optional<size_t> shard_named(const std::string& name) const;
  // Acks many jobs in one script run (ack.lua); one result per request, in
  // order. A failed call fails every request with the same status.
  void ack_all(size_t shard, const std::vector<AckRequest>& acks,
               std::function<void(std::vector<Result<AckOutcome>>)> done);
  // A failed attempt (fail.lua): rescheduled after retry_delay_ms, dead when
  // it used max_attempts (0: dead now, a dead_on answer), or deferred by the
  // answer's Retry-After without using the attempt (kDeferred).
  void fail(size_t shard, const std::string& topic, const std::string& id, const Lease& lease,
            int64_t retry_delay_ms, int max_attempts, const std::string& error,
            const FailDeferral& deferral, std::function<void(Result<FailOutcome>)> done);

  std::vector<ShardHealth> health() const;
  // The connections, one per shard in config order, lent to the operator
  // reads that fan out over them (common/store/shard_set.h).
  std::vector<AsyncShard*> connections() const;
  // Every shard's first connect has ended (up or failed).
  bool first_connects_ended() const;
  size_t pending() const;  // Redis commands awaiting replies

 private:
  struct AddState;
  // Asks the id's other homes (previous, next) whether they hold it, from
  // `next` on; then writes it on its home.
  void look_elsewhere(std::shared_ptr<AddState> state, size_t next);
  // An add with "after": registers the job with those it waits for on
  // their shards (dep_register.lua), then adds it (look_elsewhere).
  void register_waiter(const std::shared_ptr<AddState>& state);
  void run_add(std::shared_ptr<AddState> state);
  // Asks the shards of `order` from `next` on for an ended record; `done`
  // gets the latest of those found.
  void find_ended(const std::string& topic, const std::string& id, std::vector<size_t> order,
                  size_t home, size_t next, std::optional<EndedJob> latest,
                  std::function<void(std::optional<EndedJob>)> done);
  void find_job(const std::string& topic, const std::string& id, std::vector<size_t> order,
                size_t home, size_t next, std::string down, std::function<void(Result<Job>)> done);
  void read_body(size_t shard, Job job, bool body_read, std::function<void(Result<Job>)> done);
  static void read_last_error(AsyncShard* redis, Job job, std::function<void(Result<Job>)> done);
  // Runs a script on the job wherever it is (its homes in lookup order);
  // `done` gets the reply of the shard that held it, or the 404, 503 or 504.
  using WriteDone = std::function<void(const Status& status, const redisReply* found)>;
  struct JobWrite;
  void write_where_found(const std::string& topic, const std::string& id, const char* verb,
                         ScriptCall call, WriteDone done);
  void write_from(const std::shared_ptr<JobWrite>& write, size_t next);
  // update's second try: an add that found a pending job of another body
  // (added meanwhile) updates it instead, once.
  void update_once(const std::shared_ptr<UpdateRequest>& request, bool retried,
                   std::function<void(Result<Updated>)> done);
  // "Redis shard X is down: why", for the 503 of a request it could not answer.
  std::string down_reason(size_t shard);
  // Connected, and not marked down by dq-redis-checker.
  bool usable(size_t shard);
  // An unexpected reply from a shard: kInternal naming the call.
  Status unexpected(size_t shard, const char* what) const;

  std::vector<ShardAddress> addresses_;
  std::vector<std::string> names_;
  std::vector<ShardRole> roles_;  // parallel to shards_ (Config::shard_roles)
  std::vector<std::unique_ptr<AsyncShard>> shards_;
  // One per shard when [redis] wait_replicas > 0: adds run there and wait
  // for the replicas; empty otherwise.
  std::vector<std::unique_ptr<ReplicaConfirm>> confirms_;
  int probe_timeout_ms_;
  int command_timeout_ms_;
  ShardHealthView checker_;  // dq-redis-checker's verdicts, beside each connection's own
  AddBatcher batcher_;       // adds of one loop turn to one shard: one add.lua call
};

}  // namespace dq

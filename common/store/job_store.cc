// BlockingJobStore (common/store/job_store.h): each job operation waits on
// AsyncJobStore's, the one implementation (dead letters, listings and stats
// are asynchronous operations of their own: common/store/dead_letters.h,
// job_listing.h, topic_stats.h, topic_jobs.h).
#include "common/store/job_store.h"

#include <algorithm>

#include "common/core/loop_waiter.h"
#include "common/store/job_meta.h"
#include "common/store/job_records.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"
#include "common/store/store_upgrade.h"

namespace dq {
namespace {

Config config_of(const std::vector<ShardAddress>& shards, int connect_timeout_ms,
                 int command_timeout_ms) {
  Config config;
  config.shards = shards;
  config.redis_connect_timeout_ms = connect_timeout_ms;
  config.redis_command_timeout_ms = command_timeout_ms;
  // A caller that waits (a test, a tool) gives each shard the command
  // timeout to say whether it holds an id, as a blocking read would.
  config.redis_probe_timeout_ms = command_timeout_ms;
  return config;
}

}  // namespace

BlockingJobStore::BlockingJobStore(const std::vector<ShardAddress>& shards, int connect_timeout_ms,
                                   int command_timeout_ms)
    : BlockingJobStore(config_of(shards, connect_timeout_ms, command_timeout_ms)) {}

BlockingJobStore::BlockingJobStore(const Config& config)
    : addresses_(config.shards),
      waiter_(std::make_unique<LoopWaiter>()),
      async_(waiter_->base(), config),
      started_(config.shards.size(), false),
      upgraded_(config.shards.size(), false) {
  shards_.reserve(addresses_.size());
  for (const auto& address : addresses_) {
    shards_.emplace_back(address, config.redis_connect_timeout_ms, config.redis_command_timeout_ms);
  }
}

// async_ first: its shards free their events on the waiter's loop.
BlockingJobStore::~BlockingJobStore() { async_.shutdown(); }

template <typename T>
T BlockingJobStore::wait(const std::function<void(std::function<void(T)>)>& start) {
  return waiter_->wait<T>(start);
}

void BlockingJobStore::wait_connected(size_t shard) {
  while (async_.connecting(shard)) {
    event_base_loop(waiter_->base(), EVLOOP_ONCE);
  }
}

void BlockingJobStore::connect(size_t shard) {
  // A down shard reconnects at once, as a blocking connection would, rather
  // than on the async shard's next reconnect tick.
  if (!started_[shard] || !async_.connecting(shard)) {
    started_[shard] = true;
    async_.start(shard);
  }
  wait_connected(shard);
}

void BlockingJobStore::connect_all() {
  for (size_t shard = 0; shard < addresses_.size(); ++shard) {
    if (!started_[shard] || !async_.connecting(shard)) {
      started_[shard] = true;
      async_.start(shard);
    }
  }
  for (size_t shard = 0; shard < addresses_.size(); ++shard) {
    wait_connected(shard);
  }
}

Result<Added> BlockingJobStore::add(const std::string& topic, const std::string& id,
                                    const std::string& body, DueTime due, JobExpiry expiry) {
  connect_all();
  return wait<Result<Added>>([&](auto done) {
    async_.add(AddRequest{topic, id, body, due, expiry, {}, {}},
               [done](const AddRequest&, Result<Added> added) { done(std::move(added)); });
  });
}

std::optional<EndedJob> BlockingJobStore::get_ended(const std::string& topic,
                                                    const std::string& id) {
  connect_all();
  return wait<std::optional<EndedJob>>([&](auto done) { async_.get_ended(topic, id, done); });
}

Result<Job> BlockingJobStore::get(const std::string& topic, const std::string& id) {
  connect_all();
  return wait<Result<Job>>([&](auto done) { async_.get(topic, id, done); });
}

Status BlockingJobStore::del(const std::string& topic, const std::string& id, int64_t keep_ms) {
  connect_all();
  return wait<Status>([&](auto done) {
    async_.del(
        topic, id, [done](const Status& status, bool /*in_flight*/) { done(status); }, keep_ms);
  });
}

Result<RunNow> BlockingJobStore::run_now(const std::string& topic, const std::string& id) {
  connect_all();
  return wait<Result<RunNow>>([&](auto done) { async_.run_now(topic, id, done); });
}

Result<Updated> BlockingJobStore::update(UpdateRequest request) {
  connect_all();
  return wait<Result<Updated>>([&](auto done) { async_.update(std::move(request), done); });
}

Result<PromoteResult> BlockingJobStore::promote(size_t shard, int limit,
                                                const std::vector<WindowHold>& holds) {
  // Until the shard says its store is current, each promote first converts a
  // batch (common/store/store_upgrade.h); after that it is never asked again.
  bool upgrading = false;
  if (!upgraded_[shard]) {
    auto current = upgrade_store_step(shards_[shard], limit);
    if (!current.is_ok()) {
      return current.status();
    }
    upgraded_[shard] = *current;
    upgrading = !*current;
  }
  connect(shard);
  auto result =
      wait<Result<PromoteResult>>([&](auto done) { async_.promote(shard, limit, done, holds); });
  if (result.is_ok() && upgrading) {
    result->next_due_ms = result->redis_now_ms;  // more to convert: call again at once
  }
  return result;
}

Result<ExpiredResult> BlockingJobStore::requeue_expired(size_t shard, int limit,
                                                        const std::vector<ExpiryTopic>& topics,
                                                        const EndMemory& default_memory) {
  connect(shard);
  return wait<Result<ExpiredResult>>(
      [&](auto done) { async_.requeue_expired(shard, limit, done, topics, default_memory); });
}

Result<bool> BlockingJobStore::wait_timer_wake(size_t shard, int timeout_ms) {
  connect(shard);
  return wait<Result<bool>>(
      [&](auto done) { async_.wait_wake(shard, WakeList::kTimer, timeout_ms, done); });
}

Result<bool> BlockingJobStore::wait_consumer_wake(size_t shard, int timeout_ms) {
  connect(shard);
  return wait<Result<bool>>(
      [&](auto done) { async_.wait_wake(shard, WakeList::kConsumer, timeout_ms, done); });
}

Result<ReserveBatch> BlockingJobStore::reserve(size_t shard, const std::string& reserve_id,
                                               const std::vector<ReserveSlot>& slots, int most_jobs,
                                               int64_t most_bytes, const std::string& forget_id) {
  connect(shard);
  return wait<Result<ReserveBatch>>([&](auto done) {
    async_.reserve(shard, reserve_id, slots, most_jobs, most_bytes, forget_id, done);
  });
}

Status BlockingJobStore::forget_reserve(size_t shard, const std::string& reserve_id) {
  connect(shard);
  return wait<Status>([&](auto done) { async_.forget_reserve(shard, reserve_id, done); });
}

Result<int> BlockingJobStore::release(size_t shard, const std::string& reserve_id) {
  connect(shard);
  return wait<Result<int>>([&](auto done) { async_.release(shard, reserve_id, done); });
}

std::vector<Result<AckOutcome>> BlockingJobStore::ack_all(size_t shard,
                                                          const std::vector<AckRequest>& acks) {
  connect(shard);
  return wait<std::vector<Result<AckOutcome>>>(
      [&](auto done) { async_.ack_all(shard, acks, done); });
}

Result<FailOutcome> BlockingJobStore::fail(size_t shard, const std::string& topic,
                                           const std::string& id, const Lease& lease,
                                           int64_t retry_delay_ms, int max_attempts,
                                           const std::string& error, const FailDeferral& deferral) {
  connect(shard);
  return wait<Result<FailOutcome>>([&](auto done) {
    async_.fail(shard, topic, id, lease, retry_delay_ms, max_attempts, error, deferral, done);
  });
}

}  // namespace dq

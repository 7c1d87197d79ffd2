// BlockingJobStore (common/store/job_store.h): each job operation waits on
// AsyncJobStore's, the one implementation. The dead-letter calls below still
// read and write through the blocking connections.
#include "common/store/job_store.h"

#include <algorithm>

#include "common/core/loop_waiter.h"
#include "common/store/job_meta.h"
#include "common/store/job_records.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"

namespace dq {
namespace {

constexpr int kDeadBatch = 1000;

std::string job_name(const std::string& topic, const std::string& id) { return topic + "/" + id; }

Status unexpected(const RedisConnection& shard, const char* what) {
  return Status(Code::kInternal, std::string("unexpected reply to ") + what + " from Redis shard " +
                                     shard.address().name());
}

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
      started_(config.shards.size(), false) {
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
                                    const std::string& body, DueTime due) {
  connect_all();
  return wait<Result<Added>>([&](auto done) {
    async_.add(AddRequest{topic, id, body, due},
               [done](const AddRequest&, Result<Added> added) { done(std::move(added)); });
  });
}

Result<Job> BlockingJobStore::get(const std::string& topic, const std::string& id) {
  connect_all();
  return wait<Result<Job>>([&](auto done) { async_.get(topic, id, done); });
}

Status BlockingJobStore::del(const std::string& topic, const std::string& id) {
  connect_all();
  return wait<Status>([&](auto done) { async_.del(topic, id, done); });
}

Result<PromoteResult> BlockingJobStore::promote(size_t shard, int limit) {
  connect(shard);
  return wait<Result<PromoteResult>>([&](auto done) { async_.promote(shard, limit, done); });
}

Result<ExpiredResult> BlockingJobStore::requeue_expired(size_t shard, int limit) {
  connect(shard);
  return wait<Result<ExpiredResult>>(
      [&](auto done) { async_.requeue_expired(shard, limit, done); });
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

Result<std::vector<HeldCopy>> BlockingJobStore::held_copies(size_t shard,
                                                            const std::string& against, int limit) {
  connect(shard);
  return wait<Result<std::vector<HeldCopy>>>(
      [&](auto done) { async_.held_copies(shard, against, limit, done); });
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
                                           const std::string& error) {
  connect(shard);
  return wait<Result<FailOutcome>>([&](auto done) {
    async_.fail(shard, topic, id, lease, retry_delay_ms, max_attempts, error, done);
  });
}

Result<std::vector<DeadJob>> JobStore::dead_list(const std::string& topic, size_t offset,
                                                 size_t count) {
  std::vector<DeadJob> out;
  size_t skip = offset;
  for (RedisConnection& shard : shards_) {
    if (out.size() >= count) {
      break;
    }
    auto size = shard.command({"ZCARD", keys::dead(topic)});
    if (!size.is_ok()) {
      return size.status();
    }
    size_t total = static_cast<size_t>((*size)->integer);
    if (skip >= total) {
      skip -= total;
      continue;
    }
    size_t stop = std::min(total, skip + (count - out.size())) - 1;
    auto members =
        shard.command({"ZRANGE", keys::dead(topic), std::to_string(skip), std::to_string(stop)});
    skip = 0;
    if (!members.is_ok()) {
      return members.status();
    }
    const redisReply* list = members->get();
    if (list->type != REDIS_REPLY_ARRAY) {
      return unexpected(shard, "ZRANGE");
    }
    if (list->elements == 0) {
      continue;
    }
    // The same job keys, read from the three hashes a dead job spans.
    std::vector<std::string> job_keys;
    for (size_t i = 0; i < list->elements; ++i) {
      job_keys.push_back(reply_string(list->element[i]));
    }
    auto records = read_flat_records(shard, job_keys);  // dead: flat
    if (!records.is_ok()) {
      return records.status();
    }
    std::vector<ReplyPtr> columns;
    for (const std::string& hash : {keys::bodies(), keys::errors()}) {
      std::vector<std::string> argv = {"HMGET", hash};
      argv.insert(argv.end(), job_keys.begin(), job_keys.end());
      auto reply = shard.command(argv);
      if (!reply.is_ok()) {
        return reply.status();
      }
      if ((*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != job_keys.size()) {
        return unexpected(shard, "HMGET");
      }
      columns.push_back(std::move(*reply));
    }
    for (size_t i = 0; i < job_keys.size(); ++i) {
      const std::optional<std::string>& record = (*records)[i];
      if (!record) {
        continue;  // deleted in between
      }
      DeadJob dead;
      if (!split_job_key(job_keys[i], &dead.job.topic, &dead.job.id) ||
          !parse_job_meta(*record, &dead.job)) {
        continue;
      }
      const redisReply* body = columns[0]->element[i];
      if (body->type == REDIS_REPLY_STRING) {
        dead.job.body.assign(body->str, body->len);
      }
      const redisReply* error = columns[1]->element[i];
      if (error->type == REDIS_REPLY_STRING) {
        parse_error_entry(std::string_view(error->str, error->len), &dead.job);
      }
      out.push_back(std::move(dead));
    }
  }
  return out;
}

Result<int64_t> JobStore::dead_requeue(const std::string& topic, const std::string& id) {
  int64_t moved = 0;
  std::string down;
  for (RedisConnection& shard : shards_) {
    while (true) {
      auto reply = shard.run(dead_requeue_call(topic, id, id.empty() ? kDeadBatch : 1));
      if (!reply.is_ok()) {
        if (!is_unreachable(reply.status())) {
          return reply.status();
        }
        if (down.empty()) {
          down = shard.address().name();
        }
        break;
      }
      if ((*reply)->type != REDIS_REPLY_INTEGER) {
        return unexpected(shard, "dead_requeue");
      }
      moved += (*reply)->integer;
      if (!id.empty() || (*reply)->integer == 0) {
        break;
      }
    }
    if (!id.empty() && moved > 0) {
      return moved;
    }
  }
  if (!down.empty()) {
    return Status(Code::kUnavailable, "requeued " + std::to_string(moved) +
                                          " dead jobs on reachable shards; shard " + down +
                                          " is down");
  }
  if (!id.empty() && moved == 0) {
    return Status(Code::kNotFound, "job " + job_name(topic, id) + " is not in the dead-letter set");
  }
  return moved;
}

Result<int64_t> JobStore::dead_purge(const std::string& topic) {
  int64_t purged = 0;
  std::string down;
  for (RedisConnection& shard : shards_) {
    while (true) {
      auto reply = shard.run(dead_purge_call(topic, kDeadBatch));
      if (!reply.is_ok()) {
        if (!is_unreachable(reply.status())) {
          return reply.status();
        }
        if (down.empty()) {
          down = shard.address().name();
        }
        break;
      }
      if ((*reply)->type != REDIS_REPLY_INTEGER) {
        return unexpected(shard, "dead_purge");
      }
      purged += (*reply)->integer;
      if ((*reply)->integer == 0) {
        break;
      }
    }
  }
  if (!down.empty()) {
    return Status(Code::kUnavailable, "purged " + std::to_string(purged) +
                                          " dead jobs on reachable shards; shard " + down +
                                          " is down");
  }
  return purged;
}

Result<int64_t> JobStore::dead_count(const std::string& topic) {
  int64_t total = 0;
  for (RedisConnection& shard : shards_) {
    auto reply = shard.command({"ZCARD", keys::dead(topic)});
    if (!reply.is_ok()) {
      return reply.status();
    }
    if ((*reply)->type != REDIS_REPLY_INTEGER) {
      return unexpected(shard, "ZCARD");
    }
    total += (*reply)->integer;
  }
  return total;
}

}  // namespace dq

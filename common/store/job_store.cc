// JobStore: blocking job operations over every shard. The placement rules
// are common/placement.h; this file only talks to Redis.
#include "common/store/job_store.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "common/redis/replica_wait.h"
#include "common/store/job_meta.h"
#include "common/store/job_records.h"
#include "common/store/keys.h"
#include "common/store/store_upgrade.h"

namespace dq {
namespace {

constexpr int kDeadBatch = 1000;

std::string job_name(const std::string& topic, const std::string& id) { return topic + "/" + id; }

// Script replies carry numbers as integers (Lua numbers) or as strings
// (values matched out of a record, zset scores).
bool reply_int(const redisReply* reply, int64_t* out) {
  if (reply->type == REDIS_REPLY_INTEGER) {
    *out = reply->integer;
    return true;
  }
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    // Most are integers: from_chars, without the copy and strtod below.
    const char* last = reply->str + reply->len;
    int64_t whole = 0;
    auto parsed = std::from_chars(reply->str, last, whole);
    if (reply->len > 0 && parsed.ec == std::errc() && parsed.ptr == last) {
      *out = whole;
      return true;
    }
    std::string text(reply->str, reply->len);
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) {
      return false;
    }
    *out = static_cast<int64_t>(value);
    return true;
  }
  return false;
}

std::string reply_string(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    return std::string(reply->str, reply->len);
  }
  if (reply->type == REDIS_REPLY_INTEGER) {
    return std::to_string(reply->integer);
  }
  return {};
}

Status unexpected(const RedisConnection& shard, const char* what) {
  return Status(Code::kInternal, std::string("unexpected reply to ") + what + " from Redis shard " +
                                     shard.address().name());
}

// "0.250": BLPOP takes fractional seconds.
std::string blpop_seconds(int timeout_ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%d.%03d", timeout_ms / 1000, timeout_ms % 1000);
  return text;
}

}  // namespace

JobStore::JobStore(const std::vector<ShardAddress>& shards, int connect_timeout_ms,
                   int command_timeout_ms)
    : addresses_(shards), upgraded_(shards.size(), false) {
  shards_.reserve(shards.size());
  for (const auto& address : shards) {
    shards_.emplace_back(address, connect_timeout_ms, command_timeout_ms);
  }
}

JobStore::JobStore(const Config& config)
    : JobStore(config.shards, config.redis_connect_timeout_ms, config.redis_command_timeout_ms) {
  wait_replicas_ = config.redis_wait_replicas;
  wait_timeout_ms_ = config.redis_wait_timeout_ms;
}

Status JobStore::confirm_replicas(size_t shard) {
  if (wait_replicas_ <= 0) {
    return Status::ok();
  }
  RedisConnection& connection = shards_[shard];
  auto reply = connection.command(wait_argv(wait_replicas_, wait_timeout_ms_),
                                  connection.command_timeout_ms() + wait_timeout_ms_);
  if (!reply.is_ok()) {
    return wait_failed(reply.status(), addresses_[shard].name());
  }
  return read_wait_reply(reply->get(), wait_replicas_, wait_timeout_ms_, addresses_[shard].name());
}

std::vector<size_t> JobStore::order_for(const std::string& key) const {
  return shard_order(addresses_, key);
}

Result<std::optional<JobStore::StoredJob>> JobStore::read_record(size_t shard,
                                                                 const std::string& topic,
                                                                 const std::string& id) {
  auto reply = shards_[shard].command(record_read_argv(job_key(topic, id)));
  if (!reply.is_ok()) {
    return reply.status();
  }
  if ((*reply)->type == REDIS_REPLY_NIL) {
    return std::optional<StoredJob>();
  }
  StoredJob stored{Job{}, false};
  stored.job.topic = topic;
  stored.job.id = id;
  const std::string_view record((*reply)->str, (*reply)->len);
  if ((*reply)->type != REDIS_REPLY_STRING || !parse_job_meta(record, &stored.job)) {
    return Status(Code::kInternal, "job " + job_name(topic, id) +
                                       " has a malformed record on shard " +
                                       addresses_[shard].name());
  }
  stored.body_inline = body_is_inline(record);
  return std::optional<StoredJob>(std::move(stored));
}

Result<std::optional<std::string>> JobStore::read_body(size_t shard, const StoredJob& stored) {
  if (stored.body_inline) {
    return std::optional<std::string>(stored.job.body);
  }
  auto reply =
      shards_[shard].command({"HGET", keys::bodies(), job_key(stored.job.topic, stored.job.id)});
  if (!reply.is_ok()) {
    return reply.status();
  }
  if ((*reply)->type != REDIS_REPLY_STRING) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::string((*reply)->str, (*reply)->len));
}

Result<Added> JobStore::add(const std::string& topic, const std::string& id,
                            const std::string& body, DueTime due) {
  const std::vector<size_t> order = order_for(job_key(topic, id));
  std::vector<bool> reachable(shards_.size(), false);
  for (size_t index : order) {
    reachable[index] = shards_[index].ensure_connected().is_ok();
  }

  // Each pass either adds or finds one more shard unreachable.
  for (size_t pass = 0; pass <= shards_.size(); ++pass) {
    AddPlan plan = plan_add(addresses_, order, reachable);
    if (!plan.target) {
      return Status(Code::kUnavailable, "no Redis shard can take job " + job_name(topic, id) +
                                            ": every shard is unreachable");
    }
    // The add script only sees its own shard: ask the others first.
    for (size_t index : order) {
      if (!reachable[index] || index == *plan.target) {
        continue;
      }
      auto held = read_record(index, topic, id);
      if (!held.is_ok()) {
        if (!is_unreachable(held.status())) {
          return held.status();
        }
        reachable[index] = false;
        continue;
      }
      if (!held->has_value()) {
        continue;
      }
      auto stored = read_body(index, **held);
      if (!stored.is_ok()) {
        return stored.status();
      }
      std::optional<std::string_view> stored_body;
      if (*stored) {
        stored_body = **stored;
      }
      return read_copy_elsewhere((*held)->job, stored_body, body, addresses_[index].name());
    }
    plan = plan_add(addresses_, order, reachable);  // the target is unchanged
    auto reply = shards_[*plan.target].run(
        add_call(topic, id, body, due, plan.verify_against, plan.unreachable));
    if (!reply.is_ok()) {
      if (reply.status().code() != Code::kUnavailable) {
        return reply.status();
      }
      reachable[*plan.target] = false;  // it did not run: the next shard takes the job
      continue;
    }
    auto added = read_add_reply(reply->get(), 0, topic, id);
    if (!added.is_ok()) {
      return added;
    }
    Status replicated = confirm_replicas(*plan.target);
    if (!replicated.is_ok()) {
      return replicated;
    }
    return added;
  }
  return Status(Code::kUnavailable, "no Redis shard can take job " + job_name(topic, id));
}

Result<Job> JobStore::get(const std::string& topic, const std::string& id) {
  const std::string key = job_key(topic, id);
  std::string down;
  for (size_t index : order_for(key)) {
    auto held = read_record(index, topic, id);
    if (!held.is_ok()) {
      if (!is_unreachable(held.status())) {
        return held.status();
      }
      if (down.empty()) {
        down = addresses_[index].name();
      }
      continue;
    }
    if (!held->has_value()) {
      continue;
    }
    auto body = read_body(index, **held);
    if (!body.is_ok()) {
      return body.status();
    }
    Job job = std::move((*held)->job);
    if (*body) {
      job.body = std::move(**body);
    }
    RedisConnection& shard = shards_[index];
    auto error = shard.command({"HGET", keys::errors(), key});
    if (!error.is_ok()) {
      return error.status();
    }
    if ((*error)->type == REDIS_REPLY_STRING) {
      parse_error_entry(std::string_view((*error)->str, (*error)->len), &job);
    }
    return job;
  }
  if (!down.empty()) {
    return Status(Code::kUnavailable, "job " + job_name(topic, id) +
                                          " not found on reachable shards; shard " + down +
                                          " is unreachable and may hold it");
  }
  return Status(Code::kNotFound, "job " + job_name(topic, id) + " not found");
}

Status JobStore::del(const std::string& topic, const std::string& id) {
  std::vector<CopySeen> copies;
  std::vector<std::string> unreachable;
  for (size_t index = 0; index < shards_.size(); ++index) {
    auto held = read_record(index, topic, id);
    if (!held.is_ok()) {
      if (!is_unreachable(held.status())) {
        return held.status();
      }
      unreachable.push_back(addresses_[index].name());
      continue;
    }
    if (held->has_value()) {
      copies.push_back({index, (*held)->job.state});
    }
  }
  DeletePlan plan = plan_delete(copies, unreachable, topic, id);
  if (!plan.verdict.is_ok()) {
    return plan.verdict;
  }
  const std::vector<std::string> names = shard_names(addresses_);
  for (const auto& copy : copies) {
    auto reply = shards_[copy.shard].run(del_call(topic, id, plan.tomb, names));
    if (!reply.is_ok()) {
      return reply.status();
    }
  }
  return Status::ok();
}

Result<PromoteResult> JobStore::promote(size_t shard, int limit) {
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
  auto reply = shards_[shard].run(promote_call(limit));
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  int64_t moved = 0;
  int64_t next = -1;
  PromoteResult result;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || !reply_int(r->element[0], &moved) ||
      !reply_int(r->element[1], &next) || !reply_int(r->element[2], &result.redis_now_ms)) {
    return unexpected(shards_[shard], "promote");
  }
  result.moved = static_cast<int>(moved);
  if (next >= 0) {
    result.next_due_ms = next;
  }
  if (upgrading) {
    result.next_due_ms = result.redis_now_ms;  // more to convert: call again at once
  }
  return result;
}

Result<ExpiredResult> JobStore::requeue_expired(size_t shard, int limit) {
  auto reply = shards_[shard].run(requeue_expired_call(limit));
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  int64_t moved = 0;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !reply_int(r->element[0], &moved) ||
      r->element[1]->type != REDIS_REPLY_ARRAY) {
    return unexpected(shards_[shard], "requeue_expired");
  }
  ExpiredResult result;
  result.requeued = static_cast<int>(moved);
  const redisReply* dead = r->element[1];
  for (size_t i = 0; i + 1 < dead->elements; i += 2) {
    int64_t attempts = 0;
    reply_int(dead->element[i + 1], &attempts);
    result.dead.emplace_back(reply_string(dead->element[i]), static_cast<int>(attempts));
  }
  return result;
}

Result<std::vector<HeldCopy>> JobStore::held_copies(size_t shard, const std::string& against,
                                                    int limit) {
  std::vector<HeldCopy> copies;
  auto members = shards_[shard].command(
      {"ZRANGE", keys::held(against), "0", std::to_string(std::max(1, limit) - 1)});
  if (!members.is_ok()) {
    return members.status();
  }
  const redisReply* list = members->get();
  if (list->type != REDIS_REPLY_ARRAY) {
    return unexpected(shards_[shard], "ZRANGE");
  }
  if (list->elements == 0) {
    return copies;
  }
  std::vector<std::string> held_keys;
  for (size_t i = 0; i < list->elements; ++i) {
    held_keys.push_back(reply_string(list->element[i]));
  }
  auto records = read_flat_records(shards_[shard], held_keys);  // held: flat
  if (!records.is_ok()) {
    return records.status();
  }
  for (size_t i = 0; i < held_keys.size(); ++i) {
    HeldCopy copy;
    copy.key = held_keys[i];
    const std::optional<std::string>& record = (*records)[i];
    Job job;
    if (record && parse_job_meta(*record, &job)) {
      copy.incarnation = job.incarnation;
      copy.created_ms = job.created_at_ms;
    }
    copies.push_back(std::move(copy));  // no incarnation: settle just drops the entry
  }
  return copies;
}

Result<bool> JobStore::wait_wake(size_t shard, const std::string& list, int timeout_ms) {
  RedisConnection& connection = shards_[shard];
  if (timeout_ms <= 0) {  // BLPOP 0 would block forever: just take a token if one is there
    auto reply = connection.command({"LPOP", list});
    if (!reply.is_ok()) {
      return reply.status();
    }
    return (*reply)->type != REDIS_REPLY_NIL;
  }
  // The socket must outwait the BLPOP itself.
  auto reply = connection.command({"BLPOP", list, blpop_seconds(timeout_ms)},
                                  timeout_ms + connection.command_timeout_ms());
  if (!reply.is_ok()) {
    return reply.status();
  }
  return (*reply)->type == REDIS_REPLY_ARRAY && (*reply)->elements == 2;
}

Result<bool> JobStore::wait_timer_wake(size_t shard, int timeout_ms) {
  return wait_wake(shard, keys::timer_wake(), timeout_ms);
}

Result<bool> JobStore::wait_consumer_wake(size_t shard, int timeout_ms) {
  return wait_wake(shard, keys::consumer_wake(), timeout_ms);
}

Result<ReserveBatch> JobStore::reserve(size_t shard, const std::string& reserve_id,
                                       const std::vector<ReserveSlot>& slots, int most_jobs,
                                       int64_t most_bytes, const std::string& forget_id) {
  ReserveBatch batch;
  if (slots.empty()) {
    return batch;
  }
  auto reply =
      shards_[shard].run(reserve_call(reserve_id, slots, most_jobs, most_bytes, forget_id));
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || (r->elements - 2) % 6 != 0 ||
      !reply_int(r->element[0], &batch.ready_left)) {
    return unexpected(shards_[shard], "reserve");
  }
  batch.jobs.reserve((r->elements - 2) / 6);
  for (size_t i = 2; i < r->elements; i += 6) {
    ReservedJob reserved;
    reserved.shard = shard;
    reserved.lease.reserve_id = reserve_id;
    Job& job = reserved.job;
    const redisReply* key = r->element[i];
    int64_t attempt = 0;
    if (key->type != REDIS_REPLY_STRING ||
        !split_job_key(std::string_view(key->str, key->len), &job.topic, &job.id) ||
        !reply_int(r->element[i + 1], &attempt) || !reply_int(r->element[i + 2], &job.due_at_ms) ||
        !reply_int(r->element[i + 3], &job.created_at_ms) ||
        r->element[i + 5]->type != REDIS_REPLY_STRING) {
      return unexpected(shards_[shard], "reserve");
    }
    job.state = JobState::kWorking;
    job.attempts = static_cast<int>(attempt);
    job.incarnation = reply_string(r->element[i + 4]);
    reserved.lease.incarnation = job.incarnation;
    job.body.assign(r->element[i + 5]->str, r->element[i + 5]->len);
    batch.jobs.push_back(std::move(reserved));
  }
  return batch;
}

Status JobStore::forget_reserve(size_t shard, const std::string& reserve_id) {
  auto reply = shards_[shard].command({"UNLINK", keys::lease(reserve_id)});
  return reply.is_ok() ? Status::ok() : reply.status();
}

Result<int> JobStore::release(size_t shard, const std::string& reserve_id) {
  auto reply = shards_[shard].run(release_call(reserve_id));
  if (!reply.is_ok()) {
    return reply.status();
  }
  if ((*reply)->type != REDIS_REPLY_INTEGER) {
    return unexpected(shards_[shard], "release");
  }
  return static_cast<int>((*reply)->integer);
}

std::vector<Result<AckOutcome>> JobStore::ack_all(size_t shard,
                                                  const std::vector<AckRequest>& acks) {
  std::vector<Result<AckOutcome>> outcomes;
  if (acks.empty()) {
    return outcomes;
  }
  std::vector<AckTarget> targets;
  targets.reserve(acks.size());
  for (const auto& ack : acks) {
    targets.push_back({ack.topic, ack.id, ack.lease.incarnation, ack.lease.reserve_id});
  }
  auto reply = shards_[shard].run(ack_call(targets));
  outcomes.reserve(acks.size());
  if (reply.is_ok() && ((*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != acks.size())) {
    reply = unexpected(shards_[shard], "ack");
  }
  for (size_t i = 0; i < acks.size(); ++i) {
    if (!reply.is_ok()) {
      outcomes.emplace_back(reply.status());  // one script: every ack shares its fate
      continue;
    }
    const redisReply* value = (*reply)->element[i];
    if (value->type != REDIS_REPLY_INTEGER) {
      outcomes.emplace_back(unexpected(shards_[shard], "ack"));
    } else {
      outcomes.emplace_back(value->integer == 1   ? AckOutcome::kAcked
                            : value->integer == 2 ? AckOutcome::kAckedLate
                                                  : AckOutcome::kGone);
    }
  }
  return outcomes;
}

Result<FailOutcome> JobStore::fail(size_t shard, const std::string& topic, const std::string& id,
                                   const Lease& lease, int64_t retry_delay_ms, int max_attempts,
                                   const std::string& error) {
  auto reply = shards_[shard].run(fail_call(topic, id, lease.incarnation, lease.reserve_id,
                                            retry_delay_ms, max_attempts, error));
  if (!reply.is_ok()) {
    return reply.status();
  }
  if ((*reply)->type != REDIS_REPLY_INTEGER) {
    return unexpected(shards_[shard], "fail");
  }
  switch ((*reply)->integer) {
    case 1:
      return FailOutcome::kRescheduled;
    case 2:
      return FailOutcome::kDead;
    case 0:
      return FailOutcome::kStale;
    default:
      return unexpected(shards_[shard], "fail");
  }
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

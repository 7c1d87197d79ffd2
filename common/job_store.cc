// JobStore: blocking job operations over every shard. Placement follows
// shard_order(); lookups walk the whole order so jobs stay reachable after
// shards are added or while their home shard was down at add time.
#include "common/job_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/clock.h"
#include "common/keys.h"

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
    std::string text(reply->str, reply->len);
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) return false;
    *out = static_cast<int64_t>(value);
    return true;
  }
  return false;
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

void append_error(std::string* errors, const std::string& error) {
  if (!errors->empty()) errors->append("; ");
  errors->append(error);
}

}  // namespace

JobStore::JobStore(const std::vector<ShardAddress>& shards, int connect_timeout_ms,
                   int command_timeout_ms) {
  shards_.reserve(shards.size());
  for (const auto& address : shards)
    shards_.emplace_back(address, connect_timeout_ms, command_timeout_ms);
}

JobStore::JobStore(const Config& config)
    : JobStore(config.shards, config.redis_connect_timeout_ms, config.redis_command_timeout_ms) {}

std::vector<size_t> JobStore::order_for(const std::string& key) const {
  std::vector<ShardAddress> addresses;
  addresses.reserve(shards_.size());
  for (const auto& shard : shards_) addresses.push_back(shard.address());
  return shard_order(addresses, key);
}

Result<size_t> JobStore::add(const std::string& topic, const std::string& id,
                             const std::string& body, int64_t due_ms) {
  const std::string key = job_key(topic, id);
  const std::vector<size_t> order = order_for(key);
  std::string errors;
  std::vector<bool> reachable(shards_.size(), false);
  for (size_t index : order) {
    Status status = shards_[index].ensure_connected();
    reachable[index] = status.is_ok();
    if (!status.is_ok()) append_error(&errors, status.message());
  }

  // The add script only sees its own shard. The same id may sit elsewhere: on
  // a fallback shard (its home was down when it was added) or on its old home
  // (before a shard was added), so look there first.
  std::optional<size_t> home;
  for (size_t index : order) {
    if (!reachable[index]) continue;
    if (!home) {
      home = index;
      continue;
    }
    auto reply = shards_[index].command({"HEXISTS", keys::jobs(), key});
    if (!reply.is_ok()) {
      reachable[index] = false;
      append_error(&errors, reply.status().message());
      continue;
    }
    if ((*reply)->type == REDIS_REPLY_INTEGER && (*reply)->integer == 1) {
      return Status(Code::kConflict, "job " + job_name(topic, id) +
                                         " is already pending (on shard " +
                                         shards_[index].address().name() + ")");
    }
  }

  const int64_t now = now_ms();
  for (size_t index : order) {
    if (!reachable[index]) continue;
    auto reply = shards_[index].run(add_call(topic, id, due_ms, now, body));
    if (!reply.is_ok()) {
      if (reply.status().code() != Code::kUnavailable) return reply.status();
      append_error(&errors, reply.status().message());
      continue;  // it died just now: the next shard in the order takes the job
    }
    const redisReply* r = reply->get();
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) return index;
    if (r->type == REDIS_REPLY_STRING && r->len == 1) {
      if (r->str[0] == 'x') {
        return Status(Code::kConflict, "job " + job_name(topic, id) +
                                           " is in the dead-letter set; requeue or purge it first");
      }
      // The letter is the head of the held record: reuse the record parser.
      Job held;
      if (parse_job_record(std::string(1, r->str[0]) + "|0|0|0|", &held)) {
        return Status(Code::kConflict, "job " + job_name(topic, id) + " is already pending (" +
                                           state_name(held.state) + ")");
      }
    }
    return unexpected(shards_[index], "add");
  }
  return Status(Code::kUnavailable, "no Redis shard can take the job: " + errors);
}

Result<Job> JobStore::get(const std::string& topic, const std::string& id) {
  const std::string key = job_key(topic, id);
  std::string down;
  for (size_t index : order_for(key)) {
    RedisConnection& shard = shards_[index];
    auto reply = shard.command({"HGET", keys::jobs(), key});
    if (!reply.is_ok()) {
      if (reply.status().code() != Code::kUnavailable) return reply.status();
      if (down.empty()) down = shard.address().name();
      continue;
    }
    if ((*reply)->type == REDIS_REPLY_NIL) continue;
    if ((*reply)->type != REDIS_REPLY_STRING) return unexpected(shard, "HGET");
    Job job;
    if (!parse_job_record(std::string_view((*reply)->str, (*reply)->len), &job)) {
      return Status(Code::kInternal, "job " + job_name(topic, id) +
                                         " has a malformed record on shard " +
                                         shard.address().name());
    }
    job.topic = topic;
    job.id = id;
    auto error = shard.command({"HGET", keys::errors(), key});
    if (!error.is_ok()) return error.status();
    if ((*error)->type == REDIS_REPLY_STRING) {
      parse_error_entry(std::string_view((*error)->str, (*error)->len), &job);
    }
    return job;
  }
  if (!down.empty()) {
    return Status(Code::kUnavailable, "job " + job_name(topic, id) +
                                          " not found on reachable shards; shard " + down +
                                          " is down");
  }
  return Status(Code::kNotFound, "job " + job_name(topic, id) + " not found");
}

Status JobStore::del(const std::string& topic, const std::string& id) {
  const std::string key = job_key(topic, id);
  const int64_t now = now_ms();
  std::string down;
  for (size_t index : order_for(key)) {
    auto reply = shards_[index].run(del_call(topic, id, now));
    if (!reply.is_ok()) {
      if (reply.status().code() != Code::kUnavailable) return reply.status();
      if (down.empty()) down = shards_[index].address().name();
      continue;
    }
    if ((*reply)->type != REDIS_REPLY_INTEGER) return unexpected(shards_[index], "del");
    if ((*reply)->integer == 1) return Status::ok();
  }
  if (!down.empty()) {
    return Status(Code::kUnavailable, "job " + job_name(topic, id) +
                                          " not found on reachable shards; shard " + down +
                                          " is down");
  }
  return Status(Code::kNotFound, "job " + job_name(topic, id) + " not found");
}

Result<PromoteResult> JobStore::promote(size_t shard, int64_t now_ms, int limit) {
  auto reply = shards_[shard].run(promote_call(now_ms, limit));
  if (!reply.is_ok()) return reply.status();
  const redisReply* r = reply->get();
  int64_t moved = 0;
  int64_t next = -1;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !reply_int(r->element[0], &moved) ||
      !reply_int(r->element[1], &next)) {
    return unexpected(shards_[shard], "promote");
  }
  PromoteResult result;
  result.moved = static_cast<int>(moved);
  if (next >= 0) result.next_due_ms = next;
  return result;
}

Result<int> JobStore::requeue_expired(size_t shard, int64_t now_ms, int limit) {
  auto reply = shards_[shard].run(requeue_expired_call(now_ms, limit));
  if (!reply.is_ok()) return reply.status();
  if ((*reply)->type != REDIS_REPLY_INTEGER) return unexpected(shards_[shard], "requeue_expired");
  return static_cast<int>((*reply)->integer);
}

Result<bool> JobStore::wait_wake(size_t shard, const std::string& list, int timeout_ms) {
  RedisConnection& connection = shards_[shard];
  if (timeout_ms <= 0) {  // BLPOP 0 would block forever: just take a token if one is there
    auto reply = connection.command({"LPOP", list});
    if (!reply.is_ok()) return reply.status();
    return (*reply)->type != REDIS_REPLY_NIL;
  }
  // The socket must outwait the BLPOP itself.
  auto reply = connection.command({"BLPOP", list, blpop_seconds(timeout_ms)},
                                  timeout_ms + connection.command_timeout_ms());
  if (!reply.is_ok()) return reply.status();
  return (*reply)->type == REDIS_REPLY_ARRAY && (*reply)->elements == 2;
}

Result<bool> JobStore::wait_timer_wake(size_t shard, int timeout_ms) {
  return wait_wake(shard, keys::timer_wake(), timeout_ms);
}

Result<bool> JobStore::wait_consumer_wake(size_t shard, int timeout_ms) {
  return wait_wake(shard, keys::consumer_wake(), timeout_ms);
}

Result<std::vector<ReservedJob>> JobStore::reserve(size_t shard, int64_t now_ms,
                                                   const std::vector<ReserveSlot>& slots) {
  std::vector<ReservedJob> jobs;
  if (slots.empty()) return jobs;
  auto reply = shards_[shard].run(reserve_call(now_ms, slots));
  if (!reply.is_ok()) return reply.status();
  const redisReply* r = reply->get();
  if (r->type != REDIS_REPLY_ARRAY || r->elements % 5 != 0)
    return unexpected(shards_[shard], "reserve");
  jobs.reserve(r->elements / 5);
  for (size_t i = 0; i < r->elements; i += 5) {
    ReservedJob reserved;
    reserved.shard = shard;
    Job& job = reserved.job;
    const redisReply* key = r->element[i];
    int64_t attempt = 0;
    if (key->type != REDIS_REPLY_STRING ||
        !split_job_key(std::string_view(key->str, key->len), &job.topic, &job.id) ||
        !reply_int(r->element[i + 1], &attempt) || !reply_int(r->element[i + 2], &job.due_at_ms) ||
        !reply_int(r->element[i + 3], &job.created_at_ms) ||
        r->element[i + 4]->type != REDIS_REPLY_STRING) {
      return unexpected(shards_[shard], "reserve");
    }
    job.state = JobState::kWorking;
    job.attempts = static_cast<int>(attempt);
    job.body.assign(r->element[i + 4]->str, r->element[i + 4]->len);
    jobs.push_back(std::move(reserved));
  }
  return jobs;
}

// What ack.lua answered: 1 removed, 0 already gone (deleted, or acked by a
// consumer whose lease had expired).
Status JobStore::ack_status(size_t shard, const Result<ReplyPtr>& reply, const std::string& topic,
                            const std::string& id) {
  if (!reply.is_ok()) return reply.status();
  if ((*reply)->type != REDIS_REPLY_INTEGER) return unexpected(shards_[shard], "ack");
  if ((*reply)->integer == 0) {
    return Status(Code::kNotFound, "job " + job_name(topic, id) + " was already gone");
  }
  return Status::ok();
}

Status JobStore::ack(size_t shard, const std::string& topic, const std::string& id) {
  return ack_status(shard, shards_[shard].run(ack_call(topic, id, now_ms())), topic, id);
}

std::vector<Status> JobStore::ack_all(
    size_t shard, const std::vector<std::pair<std::string, std::string>>& jobs) {
  std::vector<ScriptCall> calls;
  calls.reserve(jobs.size());
  int64_t now = now_ms();
  for (const auto& job : jobs) calls.push_back(ack_call(job.first, job.second, now));
  std::vector<Result<ReplyPtr>> replies = shards_[shard].run_all(calls);
  std::vector<Status> statuses;
  statuses.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    statuses.push_back(ack_status(shard, replies[i], jobs[i].first, jobs[i].second));
  }
  return statuses;
}

Result<FailOutcome> JobStore::fail(size_t shard, const std::string& topic, const std::string& id,
                                   int attempt, int64_t retry_delay_ms, int max_attempts,
                                   const std::string& error) {
  auto reply = shards_[shard].run(
      fail_call(topic, id, attempt, now_ms(), retry_delay_ms, max_attempts, error));
  if (!reply.is_ok()) return reply.status();
  if ((*reply)->type != REDIS_REPLY_INTEGER) return unexpected(shards_[shard], "fail");
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
    if (out.size() >= count) break;
    auto size = shard.command({"ZCARD", keys::dead(topic)});
    if (!size.is_ok()) return size.status();
    size_t total = static_cast<size_t>((*size)->integer);
    if (skip >= total) {
      skip -= total;
      continue;
    }
    size_t stop = std::min(total, skip + (count - out.size())) - 1;
    auto members =
        shard.command({"ZRANGE", keys::dead(topic), std::to_string(skip), std::to_string(stop)});
    skip = 0;
    if (!members.is_ok()) return members.status();
    const redisReply* list = members->get();
    if (list->type != REDIS_REPLY_ARRAY) return unexpected(shard, "ZRANGE");
    if (list->elements == 0) continue;
    std::vector<std::string> records = {"HMGET", keys::jobs()};
    std::vector<std::string> errors = {"HMGET", keys::errors()};
    for (size_t i = 0; i < list->elements; ++i) {
      std::string key(list->element[i]->str, list->element[i]->len);
      records.push_back(key);
      errors.push_back(key);
    }
    auto record_reply = shard.command(records);
    if (!record_reply.is_ok()) return record_reply.status();
    auto error_reply = shard.command(errors);
    if (!error_reply.is_ok()) return error_reply.status();
    if ((*record_reply)->elements != list->elements || (*error_reply)->elements != list->elements) {
      return unexpected(shard, "HMGET");
    }
    for (size_t i = 0; i < list->elements; ++i) {
      const redisReply* record = (*record_reply)->element[i];
      if (record->type != REDIS_REPLY_STRING) continue;  // deleted in between
      DeadJob dead;
      if (!split_job_key(records[i + 2], &dead.job.topic, &dead.job.id) ||
          !parse_job_record(std::string_view(record->str, record->len), &dead.job)) {
        continue;
      }
      const redisReply* error = (*error_reply)->element[i];
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
      auto reply = shard.run(dead_requeue_call(topic, id, now_ms(), id.empty() ? kDeadBatch : 1));
      if (!reply.is_ok()) {
        if (reply.status().code() != Code::kUnavailable) return reply.status();
        if (down.empty()) down = shard.address().name();
        break;
      }
      if ((*reply)->type != REDIS_REPLY_INTEGER) return unexpected(shard, "dead_requeue");
      moved += (*reply)->integer;
      if (!id.empty() || (*reply)->integer == 0) break;
    }
    if (!id.empty() && moved > 0) return moved;
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
        if (reply.status().code() != Code::kUnavailable) return reply.status();
        if (down.empty()) down = shard.address().name();
        break;
      }
      if ((*reply)->type != REDIS_REPLY_INTEGER) return unexpected(shard, "dead_purge");
      purged += (*reply)->integer;
      if ((*reply)->integer == 0) break;
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
    if (!reply.is_ok()) return reply.status();
    if ((*reply)->type != REDIS_REPLY_INTEGER) return unexpected(shard, "ZCARD");
    total += (*reply)->integer;
  }
  return total;
}

}  // namespace dq

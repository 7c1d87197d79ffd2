// AsyncJobStore's per-shard calls (common/store/async_job_store.h): the
// timer's promote, requeue_expired and wake wait, and the
// consumer's reserve, release, ack and fail. Each is one command or script
// on the shard's connection; the reply is read here.
#include <algorithm>
#include <cstdio>

#include "common/store/async_job_store.h"
#include "common/store/job_meta.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

// "0.250": BLPOP takes fractional seconds.
std::string blpop_seconds(int timeout_ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%d.%03d", timeout_ms / 1000, timeout_ms % 1000);
  return text;
}

using Reply = Result<const redisReply*>;

}  // namespace

Status AsyncJobStore::unexpected(size_t shard, const char* what) const {
  return Status(Code::kInternal, std::string("unexpected reply to ") + what + " from Redis shard " +
                                     addresses_[shard].name());
}

void AsyncJobStore::promote(size_t shard, int limit,
                            std::function<void(Result<PromoteResult>)> done,
                            const std::vector<WindowHold>& holds,
                            const std::vector<std::string>& pull_topics) {
  shards_[shard]->run(
      promote_call(limit, holds, pull_topics), [this, shard, done = std::move(done)](Reply reply) {
        if (!reply.is_ok()) {
          return done(reply.status());
        }
        const redisReply* r = *reply;
        int64_t moved = 0;
        int64_t next = -1;
        int64_t held = 0;
        PromoteResult result;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 || !reply_int(r->element[0], &moved) ||
            !reply_int(r->element[1], &next) || !reply_int(r->element[2], &result.redis_now_ms) ||
            !reply_int(r->element[3], &held)) {
          return done(unexpected(shard, "promote"));
        }
        result.moved = static_cast<int>(moved);
        result.held = static_cast<int>(held);
        if (next >= 0) {
          result.next_due_ms = next;
        }
        done(std::move(result));
      });
}

void AsyncJobStore::requeue_expired(size_t shard, int limit,
                                    std::function<void(Result<ExpiredResult>)> done,
                                    const std::vector<ExpiryTopic>& topics,
                                    const EndMemory& default_memory,
                                    const std::vector<std::string>& pull_topics) {
  shards_[shard]->run(
      requeue_expired_call(limit, topics, default_memory, pull_topics),
      [this, shard, done = std::move(done)](Reply reply) {
        if (!reply.is_ok()) {
          return done(reply.status());
        }
        const redisReply* r = *reply;
        int64_t moved = 0;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !reply_int(r->element[0], &moved) ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
          return done(unexpected(shard, "requeue_expired"));
        }
        ExpiredResult result;
        result.requeued = static_cast<int>(moved);
        const redisReply* dead = r->element[1];
        for (size_t i = 0; i + 1 < dead->elements; i += 2) {
          int64_t attempts = 0;
          reply_int(dead->element[i + 1], &attempts);
          result.dead.emplace_back(reply_string(dead->element[i]), static_cast<int>(attempts));
        }
        done(std::move(result));
      });
}

void AsyncJobStore::wait_wake(size_t shard, WakeList list, int timeout_ms,
                              std::function<void(Result<bool>)> done) {
  const std::string key = list == WakeList::kTimer ? keys::timer_wake() : keys::consumer_wake();
  if (timeout_ms <= 0) {  // BLPOP 0 would block forever: just take a token if one is there
    shards_[shard]->command({"LPOP", key}, [done = std::move(done)](Reply reply) {
      done(reply.is_ok() ? Result<bool>((*reply)->type != REDIS_REPLY_NIL) : reply.status());
    });
    return;
  }
  // The command must outwait the BLPOP itself.
  shards_[shard]->command({"BLPOP", key, blpop_seconds(timeout_ms)},
                          timeout_ms + command_timeout_ms_, [done = std::move(done)](Reply reply) {
                            if (!reply.is_ok()) {
                              return done(reply.status());
                            }
                            done((*reply)->type == REDIS_REPLY_ARRAY && (*reply)->elements == 2);
                          });
}

void AsyncJobStore::reserve(size_t shard, const std::string& reserve_id,
                            const std::vector<ReserveSlot>& slots, int most_jobs,
                            int64_t most_bytes, const std::string& forget_id,
                            std::function<void(Result<ReserveBatch>)> done) {
  if (slots.empty()) {
    return done(ReserveBatch());
  }
  shards_[shard]->run(
      reserve_call(reserve_id, slots, most_jobs, most_bytes, forget_id),
      [this, shard, reserve_id, done = std::move(done)](Reply reply) {
        if (!reply.is_ok()) {
          return done(reply.status());
        }
        const redisReply* r = *reply;
        ReserveBatch batch;
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || (r->elements - 2) % 6 != 0 ||
            !reply_int(r->element[0], &batch.ready_left) ||
            !reply_int(r->element[1], &batch.redis_now_ms)) {
          return done(unexpected(shard, "reserve"));
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
              !reply_int(r->element[i + 1], &attempt) ||
              !reply_int(r->element[i + 2], &job.due_at_ms) ||
              !reply_int(r->element[i + 3], &job.created_at_ms) ||
              r->element[i + 5]->type != REDIS_REPLY_STRING) {
            return done(unexpected(shard, "reserve"));
          }
          if (attempt == -1) {  // dead-lettered as late: topic, id, attempts, reason
            int64_t attempts = 0;
            reply_int(r->element[i + 2], &attempts);
            batch.late_deaths.push_back(
                {job.topic, job.id, static_cast<int>(attempts), reply_string(r->element[i + 5])});
            continue;
          }
          job.state = JobState::kWorking;
          job.attempts = static_cast<int>(attempt);
          job.incarnation = reply_string(r->element[i + 4]);
          reserved.lease.incarnation = job.incarnation;
          job.body.assign(r->element[i + 5]->str, r->element[i + 5]->len);
          batch.jobs.push_back(std::move(reserved));
        }
        done(std::move(batch));
      });
}

void AsyncJobStore::forget_reserve(size_t shard, const std::string& reserve_id,
                                   std::function<void(Status)> done) {
  shards_[shard]->command({"UNLINK", keys::lease(reserve_id)},
                          [done = std::move(done)](Reply reply) {
                            done(reply.is_ok() ? Status::ok() : reply.status());
                          });
}

void AsyncJobStore::release(size_t shard, const std::string& reserve_id,
                            std::function<void(Result<int>)> done,
                            const std::vector<std::string>& pull_topics) {
  shards_[shard]->run(release_call(reserve_id, pull_topics),
                      [this, shard, done = std::move(done)](Reply reply) {
                        if (!reply.is_ok()) {
                          return done(reply.status());
                        }
                        if ((*reply)->type != REDIS_REPLY_INTEGER) {
                          return done(unexpected(shard, "release"));
                        }
                        done(static_cast<int>((*reply)->integer));
                      });
}

void AsyncJobStore::touch(size_t shard, const std::string& topic, const std::string& id,
                          const Lease& lease, int64_t lease_ms,
                          std::function<void(Result<std::optional<int64_t>>)> done) {
  shards_[shard]->run(touch_call(topic, id, lease.incarnation, lease.reserve_id, lease_ms),
                      [this, shard, done = std::move(done)](Reply reply) {
                        if (!reply.is_ok()) {
                          return done(reply.status());
                        }
                        const redisReply* r = *reply;
                        int64_t touched = 0;
                        int64_t until_ms = 0;
                        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                            !reply_int(r->element[0], &touched) ||
                            !reply_int(r->element[1], &until_ms)) {
                          return done(unexpected(shard, "touch"));
                        }
                        done(touched == 1 ? std::optional<int64_t>(until_ms) : std::nullopt);
                      });
}

std::optional<size_t> AsyncJobStore::shard_named(const std::string& name) const {
  for (size_t shard = 0; shard < addresses_.size(); ++shard) {
    if (addresses_[shard].name() == name) {
      return shard;
    }
  }
  return std::nullopt;
}

void AsyncJobStore::ack_all(size_t shard, const std::vector<AckRequest>& acks,
                            std::function<void(std::vector<Result<AckOutcome>>)> done) {
  if (acks.empty()) {
    return done({});
  }
  std::vector<AckTarget> targets;
  targets.reserve(acks.size());
  for (const auto& ack : acks) {
    targets.push_back({ack.topic, ack.id, ack.lease.incarnation, ack.lease.reserve_id,
                       ack.end_memory, ack.detail, ack.strict});
  }
  const size_t count = acks.size();
  shards_[shard]->run(ack_call(targets), [this, shard, count, done = std::move(done)](Reply reply) {
    std::vector<Result<AckOutcome>> outcomes;
    outcomes.reserve(count);
    Status failed = reply.is_ok() ? Status::ok() : reply.status();
    if (reply.is_ok() && ((*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != count)) {
      failed = unexpected(shard, "ack");
    }
    for (size_t i = 0; i < count; ++i) {
      if (!failed.is_ok()) {
        outcomes.emplace_back(failed);  // one script: every ack shares its fate
        continue;
      }
      const redisReply* value = (*reply)->element[i];
      if (value->type != REDIS_REPLY_INTEGER) {
        outcomes.emplace_back(unexpected(shard, "ack"));
      } else {
        outcomes.emplace_back(value->integer == 1   ? AckOutcome::kAcked
                              : value->integer == 2 ? AckOutcome::kAckedLate
                                                    : AckOutcome::kGone);
      }
    }
    done(std::move(outcomes));
  });
}

void AsyncJobStore::fail(size_t shard, const std::string& topic, const std::string& id,
                         const Lease& lease, int64_t retry_delay_ms, int max_attempts,
                         const std::string& error, const FailDeferral& deferral,
                         std::function<void(Result<FailOutcome>)> done) {
  shards_[shard]->run(fail_call(topic, id, lease.incarnation, lease.reserve_id, retry_delay_ms,
                                max_attempts, error, deferral),
                      [this, shard, done = std::move(done)](Reply reply) {
                        if (!reply.is_ok()) {
                          return done(reply.status());
                        }
                        if ((*reply)->type == REDIS_REPLY_INTEGER) {
                          switch ((*reply)->integer) {
                            case 1:
                              return done(FailOutcome::kRescheduled);
                            case 2:
                              return done(FailOutcome::kDead);
                            case 3:
                              return done(FailOutcome::kDeferred);
                            case 4:
                              return done(FailOutcome::kExpired);
                            case 0:
                              return done(FailOutcome::kStale);
                            default:
                              break;
                          }
                        }
                        done(unexpected(shard, "fail"));
                      });
}

}  // namespace dq

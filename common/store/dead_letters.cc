// Implements common/store/dead_letters.h. A page is two steps: every
// shard's ZCARD at once, then, on the shards the page falls on, one
// read-only script that returns the members of the range with their record,
// body and last error (one round trip). Requeue and purge are a chain of
// batches per shard, every shard at once.
#include "common/store/dead_letters.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "common/core/clock.h"
#include "common/store/job_meta.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr int kDeadBatch = 1000;

// KEYS: dead set, flat records, bodies, errors; ARGV: start, stop.
// Returns key, record, body, error per member (false: absent).
constexpr const char* kReadDeadRange = R"(local out = {}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[2])) do
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGET', KEYS[2], key)
  out[#out + 1] = redis.call('HGET', KEYS[3], key)
  out[#out + 1] = redis.call('HGET', KEYS[4], key)
end
return out)";

Status unexpected(const ShardSet& set, size_t index, const char* what) {
  return Status(Code::kInternal, std::string("unexpected reply to ") + what + " from Redis shard " +
                                     set.names[index]);
}

// Every shard's ZCARD of the topic's dead set at once.
void dead_sizes(const ShardSet& set, const std::string& topic,
                std::function<void(std::vector<Result<int64_t>>)> done) {
  int64_t deadline = deadline_after(set.timeout_ms);
  fan_out<int64_t>(
      set.size(),
      [set, topic, deadline](size_t index, std::function<void(Result<int64_t>)> answer) {
        ask(set, index, {"ZCARD", keys::dead(topic)}, deadline,
            [set, index, answer](Result<const redisReply*> reply) {
              if (!reply.is_ok()) {
                return answer(reply.status());
              }
              if ((*reply)->type != REDIS_REPLY_INTEGER) {
                return answer(unexpected(set, index, "ZCARD"));
              }
              answer(static_cast<int64_t>((*reply)->integer));
            });
      },
      std::move(done));
}

// The dead jobs [start, stop] of one shard.
void read_range(const ShardSet& set, size_t index, const std::string& topic, size_t start,
                size_t stop, int64_t deadline, std::function<void(Result<std::vector<Job>>)> done) {
  std::vector<std::string> argv = {"EVAL",
                                   kReadDeadRange,
                                   "4",
                                   keys::dead(topic),
                                   keys::flat_records(),
                                   keys::bodies(),
                                   keys::errors(),
                                   std::to_string(start),
                                   std::to_string(stop)};
  ask(set, index, argv, deadline, [set, index, done](Result<const redisReply*> reply) {
    if (!reply.is_ok()) {
      return done(reply.status());
    }
    const redisReply* r = *reply;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 4 != 0) {
      return done(unexpected(set, index, "a dead-letter read"));
    }
    std::vector<Job> jobs;
    for (size_t i = 0; i < r->elements; i += 4) {
      if (r->element[i + 1]->type != REDIS_REPLY_STRING) {
        continue;  // deleted in between
      }
      Job job;
      if (!split_job_key(reply_string(r->element[i]), &job.topic, &job.id) ||
          !parse_job_meta(reply_string(r->element[i + 1]), &job)) {
        continue;
      }
      if (r->element[i + 2]->type == REDIS_REPLY_STRING) {
        job.body = reply_string(r->element[i + 2]);  // else inline in the record
      }
      if (r->element[i + 3]->type == REDIS_REPLY_STRING) {
        parse_error_entry(reply_string(r->element[i + 3]), &job);
      }
      jobs.push_back(std::move(job));
    }
    done(std::move(jobs));
  });
}

// Runs call() on one shard batch after batch until a batch moves none (or,
// once is set, after the first); each batch has the set's timeout.
void run_batches(const ShardSet& set, size_t index, std::function<ScriptCall()> call, bool once,
                 int64_t so_far, std::function<void(int64_t, Status)> done) {
  ask(set, index, call(), deadline_after(set.timeout_ms),
      [set, index, call, once, so_far, done](Result<const redisReply*> reply) {
        if (!reply.is_ok()) {
          return done(so_far, reply.status());
        }
        if ((*reply)->type != REDIS_REPLY_INTEGER) {
          return done(so_far, unexpected(set, index, "a dead-letter script"));
        }
        int64_t moved = (*reply)->integer;
        if (once || moved == 0) {
          return done(so_far + moved, Status::ok());
        }
        run_batches(set, index, call, once, so_far + moved, done);
      });
}

struct ShardCount {
  int64_t count = 0;
  Status status;
};

// call() on every shard at once; then one answer: the sum, or what went
// wrong naming the shards (504 for an outcome unknown before 503 for down).
void on_every_shard(const ShardSet& set, const std::string& verb, std::function<ScriptCall()> call,
                    bool once, std::function<void(int64_t, Status)> done) {
  fan_out<ShardCount>(
      set.size(),
      [set, call, once](size_t index, std::function<void(Result<ShardCount>)> answer) {
        run_batches(set, index, call, once, 0, [answer](int64_t count, Status status) {
          answer(ShardCount{count, std::move(status)});
        });
      },
      [set, verb, done](std::vector<Result<ShardCount>> parts) {
        int64_t total = 0;
        std::vector<size_t> unknown, down;
        std::optional<Status> other;
        for (size_t i = 0; i < parts.size(); ++i) {
          total += parts[i]->count;
          const Status& status = parts[i]->status;
          if (status.code() == Code::kUnknown) {
            unknown.push_back(i);
          } else if (status.code() == Code::kUnavailable) {
            down.push_back(i);
          } else if (!status.is_ok() && !other) {
            other = status;
          }
        }
        std::string done_part =
            verb + " " + std::to_string(total) + " dead jobs on the shards that answered; ";
        if (!unknown.empty()) {
          return done(total,
                      Status(Code::kUnknown, done_part + "shard " + joined_names(set, unknown) +
                                                 " did not answer in time: outcome unknown"));
        }
        if (!down.empty()) {
          return done(total, Status(Code::kUnavailable,
                                    done_part + "shard " + joined_names(set, down) + " is down"));
        }
        done(total, other ? *other : Status::ok());
      });
}

}  // namespace

void dead_list(const ShardSet& shards, const std::string& topic, size_t offset, size_t count,
               std::function<void(Result<DeadPage>)> done) {
  int64_t deadline = deadline_after(shards.timeout_ms);
  dead_sizes(shards, topic,
             [shards, topic, offset, count, deadline,
              done = std::move(done)](std::vector<Result<int64_t>> sizes) {
               auto page = std::make_shared<DeadPage>();
               // Which range of which shard the page covers, shard after shard.
               std::vector<std::optional<std::pair<size_t, size_t>>> ranges(sizes.size());
               size_t skip = offset, left = count;
               for (size_t i = 0; i < sizes.size(); ++i) {
                 if (!sizes[i].is_ok()) {
                   page->unreachable_shards.push_back(shards.names[i]);
                   continue;
                 }
                 size_t total = static_cast<size_t>(*sizes[i]);
                 page->total += *sizes[i];
                 if (skip >= total) {
                   skip -= total;
                   continue;
                 }
                 if (left > 0) {
                   size_t take = std::min(total - skip, left);
                   ranges[i] = {skip, skip + take - 1};
                   left -= take;
                 }
                 skip = 0;
               }
               if (page->unreachable_shards.size() == shards.size() && shards.size() > 0) {
                 return done(Status(Code::kUnavailable, "no Redis shard can be reached to list " +
                                                            topic + "'s dead letters"));
               }
               // The page's reads get at least a fifth of the timeout more, so a shard
               // that answered in time is not cut off by another's stall.
               int64_t reads_by = std::max(deadline, monotonic_ms() + shards.timeout_ms / 5);
               fan_out<std::vector<Job>>(
                   shards.size(),
                   [shards, topic, ranges, reads_by](
                       size_t index, std::function<void(Result<std::vector<Job>>)> answer) {
                     if (!ranges[index]) {
                       return answer(std::vector<Job>());
                     }
                     read_range(shards, index, topic, ranges[index]->first, ranges[index]->second,
                                reads_by, std::move(answer));
                   },
                   [shards, ranges, page, done](std::vector<Result<std::vector<Job>>> parts) {
                     for (size_t i = 0; i < parts.size(); ++i) {
                       if (!parts[i].is_ok()) {
                         if (ranges[i]) {
                           page->unreachable_shards.push_back(shards.names[i]);
                         }
                         continue;
                       }
                       for (Job& job : *parts[i]) {
                         page->jobs.push_back(std::move(job));
                       }
                     }
                     done(std::move(*page));
                   });
             });
}

void dead_count(const ShardSet& shards, const std::string& topic,
                std::function<void(Result<int64_t>)> done) {
  dead_sizes(shards, topic, [shards, done = std::move(done)](std::vector<Result<int64_t>> sizes) {
    int64_t total = 0;
    std::vector<size_t> missing;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i].is_ok()) {
        total += *sizes[i];
      } else {
        missing.push_back(i);
      }
    }
    if (!missing.empty()) {
      return done(Status(Code::kUnavailable, "cannot count the dead letters: shard " +
                                                 joined_names(shards, missing) +
                                                 " did not answer"));
    }
    done(total);
  });
}

void dead_requeue(const ShardSet& shards, const std::string& topic, const std::string& id,
                  std::function<void(Result<int64_t>)> done) {
  int limit = id.empty() ? kDeadBatch : 1;
  on_every_shard(
      shards, "requeued", [topic, id, limit]() { return dead_requeue_call(topic, id, limit); },
      !id.empty(),
      [topic, id, done = std::move(done)](int64_t moved, const Status& status) {
        if (!status.is_ok()) {
          return done(status);
        }
        if (!id.empty() && moved == 0) {
          return done(Status(Code::kNotFound,
                             "job " + topic + "/" + id + " is not in the dead-letter set"));
        }
        done(moved);
      });
}

void dead_purge(const ShardSet& shards, const std::string& topic,
                std::function<void(Result<int64_t>)> done) {
  on_every_shard(
      shards, "purged", [topic]() { return dead_purge_call(topic, kDeadBatch); }, false,
      [done = std::move(done)](int64_t purged, const Status& status) {
        if (!status.is_ok()) {
          return done(status);
        }
        done(purged);
      });
}

}  // namespace dq

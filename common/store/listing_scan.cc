// The per-shard walks of a listing (common/store/listing_scan.h): async
// chains of round trips over the shard's ready list, working set or due
// buckets, each step by the listing's deadline.
#include "common/store/listing_scan.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

#include "common/core/clock.h"
#include "common/store/job_meta.h"
#include "common/store/job_records.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"

namespace dq {

Status unexpected(const ListPlan& plan, size_t index, const char* command) {
  return Status(Code::kInternal, std::string("unexpected reply to ") + command +
                                     " from Redis shard " + plan.set.names[index]);
}

char letter_of(ListState state) {
  switch (state) {
    case ListState::kDelayed:
      return 'd';
    case ListState::kReady:
      return 'r';
    case ListState::kWorking:
      return 'w';
    case ListState::kRetrying:
      return 'y';
    case ListState::kWaiting:
      return 'b';
  }
  return '?';
}

namespace {

// A chunk of entries [start, start+count) of the walked structure: job keys
// with their score (0 for a list). kept: those that may be the topic's.
struct Entry {
  std::string key;
  int64_t score = 0;
};
struct Chunk {
  size_t read = 0;  // entries looked at
  std::vector<Entry> kept;
};
using ChunkDone = std::function<void(Result<Chunk>)>;
using ChunkFn = std::function<void(int64_t start, int64_t count, ChunkDone done)>;

ChunkFn zset_chunks(const PlanPtr& plan, size_t index, const std::string& zset) {
  return [plan, index, zset](int64_t start, int64_t count, ChunkDone done) {
    std::vector<std::string> argv = {"ZRANGE", zset, std::to_string(start),
                                     std::to_string(start + count - 1), "WITHSCORES"};
    ask(plan->set, index, argv, plan->step_deadline(),
        [plan, index, done = std::move(done)](Result<const redisReply*> reply) {
          if (!reply.is_ok()) {
            return done(reply.status());
          }
          const redisReply* r = *reply;
          if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
            return done(unexpected(*plan, index, "ZRANGE"));
          }
          const std::string prefix = plan->key_prefix();
          Chunk chunk;
          chunk.read = r->elements / 2;
          for (size_t i = 0; i + 1 < r->elements; i += 2) {
            std::string key = reply_string(r->element[i]);
            if (key.compare(0, prefix.size(), prefix) != 0) {
              continue;
            }
            // Scores are integral ms, answered as text.
            double score = std::strtod(reply_string(r->element[i + 1]).c_str(), nullptr);
            chunk.kept.push_back({std::move(key), static_cast<int64_t>(score)});
          }
          done(std::move(chunk));
        });
  };
}

ChunkFn list_chunks(const PlanPtr& plan, size_t index, const std::string& list) {
  return [plan, index, list](int64_t start, int64_t count, ChunkDone done) {
    std::vector<std::string> argv = {"LRANGE", list, std::to_string(start),
                                     std::to_string(start + count - 1)};
    ask(plan->set, index, argv, plan->step_deadline(),
        [plan, index, done = std::move(done)](Result<const redisReply*> reply) {
          if (!reply.is_ok()) {
            return done(reply.status());
          }
          const redisReply* r = *reply;
          if (r->type != REDIS_REPLY_ARRAY) {
            return done(unexpected(*plan, index, "LRANGE"));
          }
          const std::string prefix = plan->key_prefix();
          Chunk chunk;
          chunk.read = r->elements;
          for (size_t i = 0; i < r->elements; ++i) {
            std::string key = reply_string(r->element[i]);
            if (key.compare(0, prefix.size(), prefix) == 0) {
              chunk.kept.push_back({std::move(key), 0});
            }
          }
          done(std::move(chunk));
        });
  };
}

// Keeps the job when its record is in the state asked for.
void keep_if_in_state(const std::string& shard, const Entry& entry, std::string_view record,
                      ListState state, ShardScan* scan) {
  if (record.empty() || record[0] != letter_of(state)) {
    return;  // another state
  }
  Job job;
  std::string topic;
  if (!parse_job_meta(record, &job) || !split_job_key(entry.key, &topic, &job.id)) {
    return;
  }
  ++scan->matched;
  Candidate found;
  found.key = entry.key;
  found.job.id = job.id;
  found.job.state = list_state_name(state);
  found.job.attempts = job.attempts;
  found.job.deferrals = job.deferrals;
  found.job.due_ms = job.due_at_ms;
  found.job.created_ms = job.created_at_ms;
  found.job.shard = shard;
  if (state == ListState::kWorking) {
    found.job.lease_deadline_ms = entry.score;
  }
  // The working set is walked in lease order and delayed jobs sorted by due;
  // a ready list in queue order, and its due times only interleave the shards.
  found.order = state == ListState::kWorking ? entry.score : job.due_at_ms;
  scan->found.push_back(std::move(found));
}

// Keeps the entries whose record is in the state asked for (their records
// read in one pipeline).
void keep_in_state(const PlanPtr& plan, size_t index, std::vector<Entry> entries,
                   const std::shared_ptr<ShardScan>& scan, std::function<void(Status)> done) {
  std::vector<std::vector<std::string>> reads;
  reads.reserve(entries.size());
  for (const auto& entry : entries) {
    reads.push_back(record_read_argv(entry.key));
  }
  auto kept = std::make_shared<std::vector<Entry>>(std::move(entries));
  auto bad = std::make_shared<bool>(false);
  ask_all(
      plan->set, index, reads, plan->step_deadline(),
      [plan, index, kept, scan, bad](size_t k, const redisReply* r) {
        if (r->type == REDIS_REPLY_STRING) {
          keep_if_in_state(plan->set.names[index], (*kept)[k], std::string_view(r->str, r->len),
                           plan->state, scan.get());
        } else if (r->type != REDIS_REPLY_NIL) {
          *bad = true;
        }
      },
      [plan, index, bad, done = std::move(done)](const Status& status) {
        if (status.is_ok() && *bad) {
          return done(unexpected(*plan, index, "a record read"));
        }
        done(status);
      });
}

void sort_by_order(ShardScan* scan) {
  std::sort(scan->found.begin(), scan->found.end(),
            [](const Candidate& a, const Candidate& b) { return a.order < b.order; });
}

// The first `need` jobs of the state on one shard from its list or the
// working set, chunk by chunk, looking at no more than kMaxExaminedPerShard
// entries.
class ChunkWalk : public std::enable_shared_from_this<ChunkWalk> {
 public:
  ChunkWalk(PlanPtr plan, size_t index, ChunkFn chunks, std::function<void(Result<ShardScan>)> done)
      : plan_(std::move(plan)), index_(index), chunks_(std::move(chunks)), done_(std::move(done)) {}

  void next() {
    auto self = shared_from_this();
    if (!plan_->searching() && scan_->found.size() >= plan_->need) {
      return done_(std::move(*scan_));
    }
    if (start_ > 0 && monotonic_ms() >= plan_->walk_until_ms) {
      scan_->truncated = true;  // out of time: what was found so far
      return done_(std::move(*scan_));
    }
    if (start_ >= kMaxExaminedPerShard) {
      return chunks_(start_, 1, [self](Result<Chunk> more) {  // anything left past the cap?
        if (!more.is_ok()) {
          return self->done_(more.status());
        }
        self->scan_->truncated = more->read > 0;
        self->done_(std::move(*self->scan_));
      });
    }
    int64_t count = std::min(kChunk, kMaxExaminedPerShard - start_);
    chunks_(start_, count, [self, count](Result<Chunk> chunk) {
      if (!chunk.is_ok()) {
        return self->done_(chunk.status());
      }
      int64_t read = static_cast<int64_t>(chunk->read);
      keep_in_state(self->plan_, self->index_, std::move(chunk->kept), self->scan_,
                    [self, read, count](const Status& kept) {
                      if (!kept.is_ok()) {
                        return self->done_(kept);
                      }
                      self->start_ += read;
                      // A search counts on; the walk's order is the
                      // listing's, so the first `need` found are the page's.
                      if (self->scan_->found.size() > self->plan_->need) {
                        self->scan_->found.resize(self->plan_->need);
                      }
                      if (read < count) {
                        return self->done_(std::move(*self->scan_));  // the end
                      }
                      self->next();
                    });
    });
  }

 private:
  PlanPtr plan_;
  size_t index_;
  ChunkFn chunks_;
  std::function<void(Result<ShardScan>)> done_;
  std::shared_ptr<ShardScan> scan_ = std::make_shared<ShardScan>();
  int64_t start_ = 0;
};

// Delayed or retrying jobs of the topic, next due first. Their buckets are
// walked in the due index's order (each scored with a lower bound of its
// earliest due), 100 per round trip; once `need` jobs are found, a bucket
// whose bound is later than the need-th due holds none earlier, and the walk
// stops. Records still in a store v2 flat hash (a shard being converted) are
// not listed.
class DueWalk : public std::enable_shared_from_this<DueWalk> {
 public:
  DueWalk(PlanPtr plan, size_t index, std::function<void(Result<ShardScan>)> done)
      : plan_(std::move(plan)), index_(index), done_(std::move(done)) {}

  void next() {
    auto self = shared_from_this();
    if (start_ > 0 && monotonic_ms() >= plan_->walk_until_ms) {
      scan_->truncated = true;  // out of time: what was found so far
      return finish();
    }
    std::vector<std::string> argv = {"ZRANGE", keys::due_index(), std::to_string(start_),
                                     std::to_string(start_ + kBucketsPerRound - 1), "WITHSCORES"};
    ask(plan_->set, index_, argv, plan_->step_deadline(),
        [self](Result<const redisReply*> reply) { self->on_buckets(reply); });
  }

 private:
  static constexpr int64_t kBucketsPerRound = 100;

  void on_buckets(const Result<const redisReply*>& reply) {
    if (!reply.is_ok()) {
      return done_(reply.status());
    }
    const redisReply* r = *reply;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
      return done_(unexpected(*plan_, index_, "ZRANGE"));
    }
    if (r->elements == 0 ||
        sorted_enough(std::strtoll(reply_string(r->element[1]).c_str(), nullptr, 10))) {
      return finish();
    }
    if (examined_ >= kMaxExaminedPerShard) {
      scan_->truncated = true;
      return finish();
    }
    std::vector<std::vector<std::string>> reads;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      reads.push_back({"HGETALL", keys::records_prefix() + reply_string(r->element[i])});
    }
    int64_t buckets = static_cast<int64_t>(r->elements / 2);
    auto self = shared_from_this();
    auto bad = std::make_shared<bool>(false);
    ask_all(
        plan_->set, index_, reads, plan_->step_deadline(),
        [self, bad](size_t /*k*/, const redisReply* all) {
          if (all->type != REDIS_REPLY_ARRAY) {
            *bad = true;
            return;
          }
          const std::string prefix = self->plan_->key_prefix();
          for (size_t i = 0; i + 1 < all->elements; i += 2) {
            ++self->examined_;
            Entry entry{reply_string(all->element[i]), 0};
            if (entry.key.compare(0, prefix.size(), prefix) != 0) {
              continue;
            }
            keep_if_in_state(self->plan_->set.names[self->index_], entry,
                             reply_string(all->element[i + 1]), self->plan_->state,
                             self->scan_.get());
          }
        },
        [self, bad, buckets](const Status& status) {
          if (!status.is_ok()) {
            return self->done_(status);
          }
          if (*bad) {
            return self->done_(unexpected(*self->plan_, self->index_, "HGETALL"));
          }
          self->start_ += buckets;
          self->keep_first_found();
          if (buckets < kBucketsPerRound) {
            return self->finish();  // the end
          }
          self->next();
        });
  }

  // A search walks every bucket to count its matches: it keeps only the
  // earliest `need` of them (buckets overlap in due time, so sorted first).
  void keep_first_found() {
    if (plan_->searching() && scan_->found.size() > 2 * plan_->need + kChunk) {
      sort_by_order(scan_.get());
      scan_->found.resize(plan_->need);
    }
  }

  bool sorted_enough(int64_t next_bound) {
    if (plan_->searching() || scan_->found.size() < plan_->need) {
      return false;
    }
    sort_by_order(scan_.get());
    return scan_->found[plan_->need - 1].order < next_bound;
  }

  void finish() {
    sort_by_order(scan_.get());
    if (scan_->found.size() > plan_->need) {
      scan_->found.resize(plan_->need);
    }
    done_(std::move(*scan_));
  }

  PlanPtr plan_;
  size_t index_;
  std::function<void(Result<ShardScan>)> done_;
  std::shared_ptr<ShardScan> scan_ = std::make_shared<ShardScan>();
  int64_t examined_ = 0;
  int64_t start_ = 0;
};

}  // namespace

void scan_state(const PlanPtr& plan, size_t index, std::function<void(Result<ShardScan>)> done) {
  switch (plan->state) {
    case ListState::kReady:
      return std::make_shared<ChunkWalk>(
                 plan, index, list_chunks(plan, index, keys::ready(plan->topic)), std::move(done))
          ->next();
    case ListState::kWorking:
      return std::make_shared<ChunkWalk>(plan, index, zset_chunks(plan, index, keys::working()),
                                         std::move(done))
          ->next();
    case ListState::kWaiting:  // the topic's waiting zset, by due
      return std::make_shared<ChunkWalk>(
                 plan, index, zset_chunks(plan, index, keys::waiting(plan->topic)), std::move(done))
          ->next();
    case ListState::kDelayed:
    case ListState::kRetrying:
      break;
  }
  std::make_shared<DueWalk>(plan, index, std::move(done))->next();
}

}  // namespace dq

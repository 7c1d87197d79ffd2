// list_topic_jobs: per shard, the first offset+limit jobs of the state in
// order (walking the shared sorted sets or the topic's ready list in chunks),
// then a merge over the shards that keeps each shard's order, then the last
// errors of the page's jobs.
#include "common/store/job_listing.h"

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "common/store/job_meta.h"
#include "common/store/job_records.h"
#include "common/store/keys.h"

namespace dq {
namespace {

constexpr int64_t kChunk = 1000;

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
  }
  return '?';
}

// One job found on a shard, with the key the merge orders it by.
struct Candidate {
  int64_t order = 0;
  std::string key;
  ListedJob job;
};

struct ShardScan {
  std::vector<Candidate> found;  // in the shard's order
  bool truncated = false;
};

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
using ChunkFn = std::function<Result<Chunk>(int64_t start, int64_t count)>;

Status unexpected(RedisConnection& shard, const char* command) {
  return Status(Code::kInternal, std::string("unexpected reply to ") + command +
                                     " from Redis shard " + shard.address().name());
}

std::string text_of(const redisReply* reply) { return std::string(reply->str, reply->len); }

ChunkFn zset_chunks(RedisConnection& shard, const std::string& zset, const std::string& topic) {
  return [&shard, zset, prefix = topic + ":"](int64_t start, int64_t count) -> Result<Chunk> {
    auto reply = shard.command(
        {"ZRANGE", zset, std::to_string(start), std::to_string(start + count - 1), "WITHSCORES"});
    if (!reply.is_ok()) {
      return reply.status();
    }
    const redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
      return unexpected(shard, "ZRANGE");
    }
    Chunk chunk;
    chunk.read = r->elements / 2;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      std::string key = text_of(r->element[i]);
      if (key.compare(0, prefix.size(), prefix) != 0) {
        continue;
      }
      // Scores are integral ms, answered as text.
      double score = std::strtod(text_of(r->element[i + 1]).c_str(), nullptr);
      chunk.kept.push_back({std::move(key), static_cast<int64_t>(score)});
    }
    return chunk;
  };
}

ChunkFn list_chunks(RedisConnection& shard, const std::string& list) {
  return [&shard, list](int64_t start, int64_t count) -> Result<Chunk> {
    auto reply =
        shard.command({"LRANGE", list, std::to_string(start), std::to_string(start + count - 1)});
    if (!reply.is_ok()) {
      return reply.status();
    }
    const redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY) {
      return unexpected(shard, "LRANGE");
    }
    Chunk chunk;
    chunk.read = r->elements;
    for (size_t i = 0; i < r->elements; ++i) {
      chunk.kept.push_back({text_of(r->element[i]), 0});
    }
    return chunk;
  };
}

// Keeps the job when its record is in the state asked for.
void keep_if_in_state(const RedisConnection& shard, const Entry& entry, std::string_view record,
                      ListState state, ShardScan* scan) {
  if (record.empty() || record[0] != letter_of(state)) {
    return;  // another state
  }
  Job job;
  std::string topic;
  if (!parse_job_meta(record, &job) || !split_job_key(entry.key, &topic, &job.id)) {
    return;
  }
  Candidate found;
  found.key = entry.key;
  found.job.id = job.id;
  found.job.state = list_state_name(state);
  found.job.attempts = job.attempts;
  found.job.due_ms = job.due_at_ms;
  found.job.created_ms = job.created_at_ms;
  found.job.shard = shard.address().name();
  if (state == ListState::kWorking) {
    found.job.lease_deadline_ms = entry.score;
  }
  // The working set is walked in lease order and delayed jobs sorted by due;
  // a ready list in queue order, and its due times only interleave the shards.
  found.order = state == ListState::kWorking ? entry.score : job.due_at_ms;
  scan->found.push_back(std::move(found));
}

// Keeps the entries whose record is in the state asked for.
Status keep_in_state(RedisConnection& shard, const std::vector<Entry>& entries, ListState state,
                     ShardScan* scan) {
  if (entries.empty()) {
    return Status::ok();
  }
  std::vector<std::string> job_keys;
  job_keys.reserve(entries.size());
  for (const auto& entry : entries) {
    job_keys.push_back(entry.key);
  }
  auto records = read_records(shard, job_keys);
  if (!records.is_ok()) {
    return records.status();
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if ((*records)[i]) {
      keep_if_in_state(shard, entries[i], *(*records)[i], state, scan);
    }
  }
  return Status::ok();
}

// Delayed or retrying jobs of the topic, next due first. Their buckets are
// walked in the due index's order (each scored with a lower bound of its
// earliest due); once `need` jobs are found, a bucket whose bound is later
// than the need-th due holds none earlier, and the walk stops. Records still
// in a store v2 flat hash (a shard being converted) are not listed.
Result<ShardScan> scan_due(RedisConnection& shard, const std::string& topic, ListState state,
                           size_t need) {
  ShardScan scan;
  const std::string prefix = topic + ":";
  int64_t examined = 0, start = 0;
  constexpr int64_t kBucketsPerRound = 100;
  auto sorted_enough = [&](int64_t next_bound) {
    if (scan.found.size() < need) {
      return false;
    }
    std::sort(scan.found.begin(), scan.found.end(),
              [](const Candidate& a, const Candidate& b) { return a.order < b.order; });
    return scan.found[need - 1].order < next_bound;
  };
  while (true) {
    auto reply = shard.command({"ZRANGE", keys::due_index(), std::to_string(start),
                                std::to_string(start + kBucketsPerRound - 1), "WITHSCORES"});
    if (!reply.is_ok()) {
      return reply.status();
    }
    const redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
      return unexpected(shard, "ZRANGE");
    }
    if (r->elements == 0) {
      break;
    }
    if (sorted_enough(std::strtoll(text_of(r->element[1]).c_str(), nullptr, 10))) {
      break;
    }
    if (examined >= kMaxExaminedPerShard) {
      scan.truncated = true;
      break;
    }
    std::vector<std::vector<std::string>> reads;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      reads.push_back({"HGETALL", keys::records_prefix() + text_of(r->element[i])});
    }
    for (auto& bucket : shard.command_all(reads)) {
      if (!bucket.is_ok()) {
        return bucket.status();
      }
      const redisReply* all = bucket->get();
      if (all->type != REDIS_REPLY_ARRAY) {
        return unexpected(shard, "HGETALL");
      }
      for (size_t i = 0; i + 1 < all->elements; i += 2) {
        ++examined;
        Entry entry{text_of(all->element[i]), 0};
        if (entry.key.compare(0, prefix.size(), prefix) != 0) {
          continue;
        }
        keep_if_in_state(shard, entry, text_of(all->element[i + 1]), state, &scan);
      }
    }
    start += static_cast<int64_t>(r->elements / 2);
    if (static_cast<int64_t>(r->elements / 2) < kBucketsPerRound) {
      break;  // the end
    }
  }
  std::sort(scan.found.begin(), scan.found.end(),
            [](const Candidate& a, const Candidate& b) { return a.order < b.order; });
  if (scan.found.size() > need) {
    scan.found.resize(need);
  }
  return scan;
}

// The first `need` jobs of the state on one shard, looking at no more than
// kMaxExaminedPerShard entries.
Result<ShardScan> scan_shard(const ChunkFn& chunks, RedisConnection& shard, ListState state,
                             size_t need) {
  ShardScan scan;
  int64_t start = 0;
  while (scan.found.size() < need) {
    if (start >= kMaxExaminedPerShard) {
      auto more = chunks(start, 1);  // is anything left past the cap?
      if (!more.is_ok()) {
        return more.status();
      }
      scan.truncated = more->read > 0;
      break;
    }
    int64_t count = std::min(kChunk, kMaxExaminedPerShard - start);
    auto chunk = chunks(start, count);
    if (!chunk.is_ok()) {
      return chunk.status();
    }
    Status kept = keep_in_state(shard, chunk->kept, state, &scan);
    if (!kept.is_ok()) {
      return kept;
    }
    start += static_cast<int64_t>(chunk->read);
    if (static_cast<int64_t>(chunk->read) < count) {
      break;  // the end
    }
  }
  return scan;
}

Result<ShardScan> scan_state(RedisConnection& shard, const std::string& topic, ListState state,
                             size_t need) {
  switch (state) {
    case ListState::kReady:
      return scan_shard(list_chunks(shard, keys::ready(topic)), shard, state, need);
    case ListState::kWorking:
      return scan_shard(zset_chunks(shard, keys::working(), topic), shard, state, need);
    case ListState::kDelayed:
    case ListState::kRetrying:
      break;
  }
  return scan_due(shard, topic, state, need);
}

Result<int64_t> count_in_state(RedisConnection& shard, const std::string& topic, ListState state) {
  auto reply = shard.command({"HGET", keys::counts(), topic + ":" + letter_of(state)});
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  if (r->type == REDIS_REPLY_NIL) {
    return int64_t{0};
  }
  if (r->type != REDIS_REPLY_STRING) {
    return unexpected(shard, "HGET");
  }
  return static_cast<int64_t>(std::strtoll(text_of(r).c_str(), nullptr, 10));
}

// Fills the last errors of the page's jobs found on one shard.
Status fill_errors(RedisConnection& shard, const std::vector<Candidate*>& jobs) {
  if (jobs.empty()) {
    return Status::ok();
  }
  std::vector<std::string> argv = {"HMGET", keys::errors()};
  for (const Candidate* job : jobs) {
    argv.push_back(job->key);
  }
  auto reply = shard.command(argv);
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  if (r->type != REDIS_REPLY_ARRAY || r->elements != jobs.size()) {
    return unexpected(shard, "HMGET");
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (r->element[i]->type != REDIS_REPLY_STRING) {
      continue;
    }
    Job parsed;
    parse_error_entry(std::string_view(r->element[i]->str, r->element[i]->len), &parsed);
    jobs[i]->job.last_error = parsed.last_error;
    jobs[i]->job.last_error_ms = parsed.last_error_at_ms;
  }
  return Status::ok();
}

}  // namespace

std::optional<ListState> parse_list_state(std::string_view text) {
  for (ListState state :
       {ListState::kDelayed, ListState::kReady, ListState::kWorking, ListState::kRetrying}) {
    if (text == list_state_name(state)) {
      return state;
    }
  }
  return std::nullopt;
}

const char* list_state_name(ListState state) {
  switch (state) {
    case ListState::kDelayed:
      return "delayed";
    case ListState::kReady:
      return "ready";
    case ListState::kWorking:
      return "working";
    case ListState::kRetrying:
      return "retrying";
  }
  return "unknown";
}

Result<JobPage> list_topic_jobs(JobStore& store, const std::string& topic, ListState state,
                                int64_t offset, int64_t limit) {
  if (offset < 0) {
    return Status(Code::kInvalid, "offset must be 0 or more");
  }
  if (limit < 1 || limit > kMaxListLimit) {
    return Status(Code::kInvalid, "limit must be 1 to " + std::to_string(kMaxListLimit));
  }
  JobPage page;
  const size_t need = static_cast<size_t>(offset + limit);
  std::vector<ShardScan> scans(store.shard_count());
  std::vector<bool> reachable(store.shard_count(), false);
  for (size_t i = 0; i < store.shard_count(); ++i) {
    RedisConnection& shard = store.shard(i);
    auto total = count_in_state(shard, topic, state);
    auto scan = total.is_ok() ? scan_state(shard, topic, state, need) : total.status();
    if (!scan.is_ok()) {
      page.unreachable_shards.push_back(shard.address().name());
      continue;
    }
    reachable[i] = true;
    page.total += *total;
    page.truncated = page.truncated || scan->truncated;
    scans[i] = std::move(*scan);
  }
  if (page.unreachable_shards.size() == store.shard_count()) {
    return Status(Code::kUnavailable, "no Redis shard can be reached to list " + topic + "'s jobs");
  }
  // Merge: always the shard whose next job comes first, so each shard keeps
  // its own order (a ready list's queue order included).
  std::vector<size_t> next(scans.size(), 0);
  std::vector<std::vector<Candidate*>> on_shard(scans.size());
  std::vector<Candidate*> chosen;
  for (size_t taken = 0; taken < need; ++taken) {
    size_t best = scans.size();
    for (size_t i = 0; i < scans.size(); ++i) {
      if (next[i] >= scans[i].found.size()) {
        continue;
      }
      if (best == scans.size() ||
          scans[i].found[next[i]].order < scans[best].found[next[best]].order) {
        best = i;
      }
    }
    if (best == scans.size()) {
      break;
    }
    Candidate* candidate = &scans[best].found[next[best]++];
    if (taken < static_cast<size_t>(offset)) {
      continue;
    }
    chosen.push_back(candidate);
    on_shard[best].push_back(candidate);
  }
  for (size_t i = 0; i < scans.size(); ++i) {
    // A shard lost now leaves its jobs listed without their errors, and named.
    if (reachable[i] && !fill_errors(store.shard(i), on_shard[i]).is_ok()) {
      page.unreachable_shards.push_back(store.shard(i).address().name());
    }
  }
  for (Candidate* candidate : chosen) {
    page.jobs.push_back(std::move(candidate->job));
  }
  return page;
}

Json to_json(const JobPage& page) {
  Json jobs = Json::array();
  for (const ListedJob& job : page.jobs) {
    Json row{{"id", job.id},
             {"state", job.state},
             {"attempts", job.attempts},
             {"due_at_ms", job.due_ms},
             {"created_at_ms", job.created_ms},
             {"shard", job.shard}};
    if (!job.last_error.empty()) {
      row["last_error"] = job.last_error;
      row["last_error_at_ms"] = job.last_error_ms;
    }
    if (job.state == "working") {
      row["lease_deadline_ms"] = job.lease_deadline_ms;
    }
    jobs.push_back(std::move(row));
  }
  return Json{{"total", page.total},
              {"truncated", page.truncated},
              {"unreachable_shards", page.unreachable_shards},
              {"jobs", std::move(jobs)}};
}

}  // namespace dq

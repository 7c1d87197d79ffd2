// list_topic_jobs: every shard at once, each its first offset+limit jobs of
// the state in order (walking the shared sorted sets or the topic's ready
// list in chunks, an async chain of round trips) with their last errors;
// then a merge over the shards that keeps each shard's order.
#include "common/store/job_listing.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>

#include "common/store/job_meta.h"
#include "common/store/keys.h"
#include "common/store/listing_scan.h"

namespace dq {
namespace {

// Fills the last errors of the jobs found (HMGETs of at most kChunk fields,
// pipelined) and, for waiting jobs, what each still waits for ({dq}:after,
// in the same pipeline).
void fill_errors(const PlanPtr& plan, size_t index, const std::shared_ptr<ShardScan>& scan,
                 std::function<void(Status)> done) {
  std::vector<std::vector<std::string>> reads;
  const bool waiting = plan->state == ListState::kWaiting;
  for (const std::string& hash : waiting ? std::vector<std::string>{keys::errors(), keys::after()}
                                         : std::vector<std::string>{keys::errors()}) {
    for (size_t i = 0; i < scan->found.size(); ++i) {
      if (i % kChunk == 0) {
        reads.push_back({"HMGET", hash});
      }
      reads.back().push_back(scan->found[i].key);
    }
  }
  const size_t error_reads = waiting ? reads.size() / 2 : reads.size();
  auto bad = std::make_shared<bool>(false);
  ask_all(
      plan->set, index, reads, plan->step_deadline(),
      [scan, bad, error_reads](size_t k, const redisReply* r) {
        bool after = k >= error_reads;
        size_t first = (after ? k - error_reads : k) * static_cast<size_t>(kChunk);
        size_t count = std::min(scan->found.size() - first, static_cast<size_t>(kChunk));
        if (r->type != REDIS_REPLY_ARRAY || r->elements != count) {
          *bad = true;
          return;
        }
        for (size_t i = 0; i < count; ++i) {
          if (r->element[i]->type != REDIS_REPLY_STRING) {
            continue;
          }
          std::string_view text(r->element[i]->str, r->element[i]->len);
          ListedJob& job = scan->found[first + i].job;
          if (after) {
            job.after = split_after_keys(text);
            continue;
          }
          Job parsed;
          parse_error_entry(text, &parsed);
          job.last_error = parsed.last_error;
          job.last_error_ms = parsed.last_error_at_ms;
        }
      },
      [plan, index, bad, done = std::move(done)](const Status& status) {
        if (status.is_ok() && *bad) {
          return done(unexpected(*plan, index, "HMGET"));
        }
        done(status);
      });
}

// One shard's part: its count in the state ({dq}:counts) and, at the same
// time, its first `need` jobs, then their last errors.
struct ShardPart {
  int64_t total = 0;
  ShardScan scan;
};

void read_part(const PlanPtr& plan, size_t index, std::function<void(Result<ShardPart>)> done) {
  struct Both {
    std::optional<Result<int64_t>> total;
    std::optional<Result<ShardScan>> scan;
    std::function<void(Result<ShardPart>)> done;
  };
  auto both = std::make_shared<Both>();
  both->done = std::move(done);
  auto maybe_done = [plan, index, both]() {
    if (!both->total || !both->scan) {
      return;
    }
    if (!both->total->is_ok()) {
      return both->done(both->total->status());
    }
    if (!both->scan->is_ok()) {
      return both->done(both->scan->status());
    }
    auto scan = std::make_shared<ShardScan>(std::move(**both->scan));
    int64_t total = **both->total;
    fill_errors(plan, index, scan, [both, scan, total](const Status& filled) {
      if (!filled.is_ok()) {
        return both->done(filled);
      }
      both->done(ShardPart{total, std::move(*scan)});
    });
  };
  std::vector<std::string> argv = {"HGET", keys::counts(),
                                   plan->topic + ":" + letter_of(plan->state)};
  ask(plan->set, index, argv, plan->step_deadline(),
      [plan, index, both, maybe_done](Result<const redisReply*> reply) {
        if (!reply.is_ok()) {
          both->total.emplace(reply.status());
        } else if ((*reply)->type == REDIS_REPLY_NIL) {
          both->total.emplace(int64_t{0});
        } else if ((*reply)->type != REDIS_REPLY_STRING) {
          both->total.emplace(unexpected(*plan, index, "HGET"));
        } else {
          both->total.emplace(static_cast<int64_t>(
              std::strtoll(std::string((*reply)->str, (*reply)->len).c_str(), nullptr, 10)));
        }
        maybe_done();
      });
  scan_state(plan, index, [both, maybe_done](Result<ShardScan> scan) {
    both->scan.emplace(std::move(scan));
    maybe_done();
  });
}

// Merges the shards' parts: always the shard whose next job comes first, so
// each shard keeps its own order (a ready list's queue order included).
JobPage merge(const ListPlan& plan, std::vector<Result<ShardPart>>& parts, size_t offset) {
  JobPage page;
  std::vector<ShardScan*> scans;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].is_ok()) {
      page.unreachable_shards.push_back(plan.set.names[i]);
      continue;
    }
    page.total += plan.searching() ? parts[i]->scan.matched : parts[i]->total;
    page.truncated = page.truncated || parts[i]->scan.truncated;
    scans.push_back(&parts[i]->scan);
  }
  std::vector<size_t> next(scans.size(), 0);
  for (size_t taken = 0; taken < plan.need; ++taken) {
    size_t best = scans.size();
    for (size_t i = 0; i < scans.size(); ++i) {
      if (next[i] >= scans[i]->found.size()) {
        continue;
      }
      if (best == scans.size() ||
          scans[i]->found[next[i]].order < scans[best]->found[next[best]].order) {
        best = i;
      }
    }
    if (best == scans.size()) {
      break;
    }
    Candidate& candidate = scans[best]->found[next[best]++];
    if (taken >= offset) {
      page.jobs.push_back(std::move(candidate.job));
    }
  }
  return page;
}

}  // namespace

std::optional<ListState> parse_list_state(std::string_view text) {
  for (ListState state : {ListState::kDelayed, ListState::kReady, ListState::kWorking,
                          ListState::kRetrying, ListState::kWaiting}) {
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
    case ListState::kWaiting:
      return "waiting";
  }
  return "unknown";
}

Status check_id_prefix(std::string_view id_prefix) {
  if (id_prefix.size() > kMaxIdPrefixBytes) {
    return Status(Code::kInvalid, "id_prefix is " + std::to_string(id_prefix.size()) +
                                      " bytes; an id has at most " +
                                      std::to_string(kMaxIdPrefixBytes));
  }
  for (char c : id_prefix) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Status(Code::kInvalid, "id_prefix holds a control character, which no id has");
    }
  }
  return Status::ok();
}

void list_topic_jobs(const ShardSet& shards, const std::string& topic, ListState state,
                     int64_t offset, int64_t limit, const std::string& id_prefix,
                     std::function<void(Result<JobPage>)> done) {
  if (offset < 0) {
    return done(Status(Code::kInvalid, "offset must be 0 or more"));
  }
  if (limit < 1 || limit > kMaxListLimit) {
    return done(Status(Code::kInvalid, "limit must be 1 to " + std::to_string(kMaxListLimit)));
  }
  if (Status prefix = check_id_prefix(id_prefix); !prefix.is_ok()) {
    return done(prefix);
  }
  auto plan = std::make_shared<ListPlan>();
  plan->set = shards;
  plan->walk_until_ms = deadline_after(shards.timeout_ms);
  plan->topic = topic;
  plan->id_prefix = id_prefix;
  plan->state = state;
  plan->need = static_cast<size_t>(offset + limit);
  PlanPtr fixed = plan;
  fan_out<ShardPart>(
      fixed->set.size(),
      [fixed](size_t index, std::function<void(Result<ShardPart>)> answer) {
        read_part(fixed, index, std::move(answer));
      },
      [fixed, offset, done = std::move(done)](std::vector<Result<ShardPart>> parts) {
        JobPage page = merge(*fixed, parts, static_cast<size_t>(offset));
        if (page.unreachable_shards.size() == fixed->set.size()) {
          return done(Status(Code::kUnavailable,
                             "no Redis shard can be reached to list " + fixed->topic + "'s jobs"));
        }
        done(std::move(page));
      });
}

Json to_json(const JobPage& page) {
  Json jobs = Json::array();
  for (const ListedJob& job : page.jobs) {
    Json row{{"id", job.id},
             {"state", job.state},
             {"attempts", job.attempts},
             {"deferrals", job.deferrals},
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
    if (job.state == "waiting") {
      Json after = Json::array();
      for (const std::string& key : job.after) {
        std::string topic, id;
        if (split_job_key(key, &topic, &id)) {
          after.push_back(Json{{"topic", topic}, {"id", id}});
        }
      }
      row["after"] = std::move(after);
    }
    jobs.push_back(std::move(row));
  }
  return Json{{"total", page.total},
              {"truncated", page.truncated},
              {"unreachable_shards", page.unreachable_shards},
              {"jobs", std::move(jobs)}};
}

}  // namespace dq

// The per-shard part of a listing (common/store/job_listing.h): the first
// `need` jobs of the state on one shard, in its order, as an async chain of
// round trips (the ready list or working set chunk by chunk, the due buckets
// 100 at a time), each step within the set's timeout_ms, the walk stopping
// (truncated) once it has run that long. Internal to job_listing.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/store/job_listing.h"
#include "common/store/shard_set.h"

namespace dq {

constexpr int64_t kChunk = 1000;

// One job found on a shard, with the key the merge orders it by.
struct Candidate {
  int64_t order = 0;
  std::string key;
  ListedJob job;
};

struct ShardScan {
  std::vector<Candidate> found;  // in the shard's order
  int64_t matched = 0;           // jobs kept so far, found or not (an id search counts them all)
  bool truncated = false;
};

// One listing: the shards, its deadline and what it looks for.
struct ListPlan {
  ShardSet set;
  // Each round trip must answer within the set's timeout_ms (else the shard
  // is unreachable); a walk still going at walk_until_ms (timeout_ms after
  // the start) stops there with what it found, truncated.
  int64_t walk_until_ms = 0;
  int64_t step_deadline() const { return deadline_after(set.timeout_ms); }
  std::string topic;
  std::string id_prefix;  // "": every job of the topic
  ListState state = ListState::kDelayed;
  size_t need = 0;  // offset + limit
  // A search (an id prefix) walks on past `need` to count every match, and
  // keeps only the first `need` of them.
  bool searching() const { return !id_prefix.empty(); }
  // The text a job's key starts with: "topic:" and the id prefix.
  std::string key_prefix() const { return topic + ":" + id_prefix; }
};
using PlanPtr = std::shared_ptr<const ListPlan>;

char letter_of(ListState state);
Status unexpected(const ListPlan& plan, size_t index, const char* command);

// The shard's first plan.need jobs of the state, in its order.
void scan_state(const PlanPtr& plan, size_t index, std::function<void(Result<ShardScan>)> done);

}  // namespace dq

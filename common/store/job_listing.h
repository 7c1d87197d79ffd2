// A topic's pending jobs in one state, for the HTTP API, dqctl and the admin
// page: next due first (ready: queue order; working: lease deadline), merged
// over the shards, paged.
//
// Working jobs share {dq}:working with every other topic: it is walked in
// lease order and filtered by the "topic:" prefix and the state in each
// job's record. Delayed and retrying jobs are found in their record buckets,
// walked in the due index's order until no later bucket can hold an earlier
// job (store v3, common/store/keys.h). At most kMaxExaminedPerShard entries per
// shard are looked at per request, and `truncated` says so when that cap
// was hit before the page was full (checked between rounds of 100
// buckets), or when the walk ran out of time ([redis] command_timeout_ms). Ready
// jobs are read from the topic's own list. A listing is not a snapshot: a job
// that changes state meanwhile may be missed or shown twice.
//
// Asynchronous, over the caller's shards (common/store/shard_set.h), every
// shard asked at once; waiting callers use common/core/loop_waiter.h. A shard
// that cannot be reached, or does not answer a round trip within the set's
// timeout_ms, is left out and named in unreachable_shards; when no shard
// answers the call fails (kUnavailable).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/store/shard_set.h"

namespace dq {

// kWaiting: jobs waiting for the jobs their add named in "after"
// ({dq}:waiting:<topic>, by due).
enum class ListState { kDelayed, kReady, kWorking, kRetrying, kWaiting };

// "delayed"|"ready"|"working"|"retrying"|"waiting"; nullopt for anything else.
std::optional<ListState> parse_list_state(std::string_view text);
const char* list_state_name(ListState state);

constexpr int64_t kMaxListLimit = 500;
constexpr size_t kMaxIdPrefixBytes = 256;
constexpr int64_t kMaxExaminedPerShard = 200000;

struct ListedJob {
  std::string id;
  std::string state;  // "delayed","ready","working","retrying"
  int attempts = 0;
  int deferrals = 0;  // Retry-After answers honoured
  int64_t due_ms = 0;
  int64_t created_ms = 0;
  std::string last_error;
  int64_t last_error_ms = 0;
  std::string shard;
  int64_t lease_deadline_ms = 0;  // working jobs only: when the lease expires
  // waiting jobs only: the job keys ("topic:id") it still waits for ({dq}:after)
  std::vector<std::string> after;
};

struct JobPage {
  std::vector<ListedJob> jobs;
  int64_t total = 0;  // jobs in the state on the reachable shards ({dq}:counts)
  bool truncated = false;
  std::vector<std::string> unreachable_shards;
};

// A topic's jobs in one state, next due first (ready: queue order; working:
// lease deadline), merged over shards, paged. kInvalid unless offset >= 0 and
// 1 <= limit <= kMaxListLimit, and for a bad id_prefix.
//
// id_prefix ("": every job) keeps the jobs whose id starts with it: a search,
// so the walk goes on past the page to count the matches (`total` is then
// the matches found, not {dq}:counts), within the same caps (at most
// kMaxExaminedPerShard entries per shard, the set's timeout_ms) and
// `truncated` when one of them cut it short.
void list_topic_jobs(const ShardSet& shards, const std::string& topic, ListState state,
                     int64_t offset, int64_t limit, const std::string& id_prefix,
                     std::function<void(Result<JobPage>)> done);

// An id prefix a listing takes: at most 256 bytes (an id's limit), no
// control characters; "" is every job.
Status check_id_prefix(std::string_view id_prefix);

// {"total","truncated","unreachable_shards","jobs":[{"id","state","attempts",
//  "due_at_ms","created_at_ms","shard"(,"last_error","last_error_at_ms")
//  (,"lease_deadline_ms")}]} (docs/listing.md).
Json to_json(const JobPage& page);

}  // namespace dq

// Per topic numbers read from the shards' counters (common/store/keys.h): how many
// jobs each state holds now ({dq}:counts), and event counts since the start
// ({dq}:totals), per minute over the last hour ({dq}:minute:<m>) and per day
// over the last 30 days ({dq}:stats:YYYYMMDD), summed over the shards.
// One implementation for the HTTP API, dqctl and the admin page:
// asynchronous, over the caller's shards (common/store/shard_set.h), every
// shard asked at once; waiting callers use common/core/loop_waiter.h.
//
// A shard that cannot be reached, or does not answer within the set's
// timeout_ms, is left out of the numbers and named in unreachable_shards;
// when no shard answers the call fails (kUnavailable) instead of answering
// zeros.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/job_counts.h"
#include "common/core/json.h"
#include "common/core/status.h"
#include "common/store/shard_set.h"

namespace dq {

struct TopicStats {
  std::string topic;
  StateCounts now;    // {dq}:counts summed over reachable shards
  EventCounts total;  // {dq}:totals
  // Last 60 unix minutes (Redis clock of the first reachable shard), oldest
  // first, zero-filled; the last one is the minute still running.
  std::vector<std::pair<int64_t, EventCounts>> per_minute;
  // Last 30 days "YYYYMMDD" (the host's local calendar, as the counters are
  // named), oldest first, zero-filled; the last one is today.
  std::vector<std::pair<std::string, EventCounts>> per_day;
  std::vector<std::string> unreachable_shards;  // shard names left out of the numbers
};

// One topic; with_series=false skips per_minute/per_day (cheap, for lists).
// A topic with nothing counted answers zeros (the caller decides whether the
// topic exists).
void topic_stats(const ShardSet& shards, const std::string& topic, bool with_series,
                 std::function<void(Result<TopicStats>)> done);

// Every topic seen in the counters, plus the names given (so registered
// topics with nothing show zeros), one pass per shard, sorted by name.
void all_topic_stats(const ShardSet& shards, const std::vector<std::string>& topics,
                     bool with_series, std::function<void(Result<std::vector<TopicStats>>)> done);

// The shape GET /v1/topics/{t}/stats answers (docs/listing.md):
// {"topic","now":{delayed,ready,working,retrying,dead,waiting},"total":{events},
//  "per_minute":[{"minute","at_ms",events...}],"per_day":[{"day",events...}],
//  "unreachable_shards":[...]}; per_minute and per_day only with the series.
Json to_json(const TopicStats& stats);
Json to_json(const StateCounts& counts);
Json to_json(const EventCounts& counts);

}  // namespace dq

// The read-only listing routes of the HTTP API, over common/store/topic_stats.h
// and common/store/job_listing.h (the same code dqctl and the admin page use):
//   GET /v1/topics?search=&offset=&limit=          registered topics + counts
//   GET /v1/topics/{topic}                          its settings
//   GET /v1/topics/{topic}/stats                    counts, totals, minutes, days
//   GET /v1/topics/{topic}/jobs?state=&offset=&limit=
// Each takes the request's parameters as text and answers through `done`,
// later, from the event loop: they never wait on Redis. Every shard is asked
// at once, each within [redis] command_timeout_ms; one that does not answer
// in time is named in "unreachable_shards" and slows no other request.
#pragma once

#include <functional>
#include <string>

#include "common/core/json.h"
#include "common/registry/topic_cache.h"
#include "common/store/shard_set.h"

namespace dq {

struct ListingAnswer {
  int status = 200;
  // Null, as `Json body;` would be, but through the value_t constructor that
  // Json's noexcept default one delegates to: otherwise ListingAnswer() is
  // noexcept too, and bugprone-exception-escape follows it into nlohmann's
  // throw for a bad value_t (never reached for null).
  Json body = Json::value_t::null;
};

struct ListingQuery {
  std::string search;     // topics: substring of the name, any case
  std::string state;      // jobs: delayed, ready, working, retrying or waiting
  std::string offset;     // "" for the default, 0
  std::string limit;      // "" for the default: 100 topics, 50 jobs; at most 500
  std::string id_prefix;  // jobs: only ids that start with it ("": every job)
};

using ListingDone = std::function<void(ListingAnswer)>;

// GET /v1/topics/{topic}: its settings as every view shows them
// (common/registry/topic_json.h; signing secrets masked), from the registry
// snapshot, so no Redis; 404 for an unknown topic.
ListingAnswer topic_answer(TopicCache& topics, const std::string& topic);

// in_scope, when given, leaves out the topics it says no to (an API token's scope).
void topics_answer(const ShardSet& shards, TopicCache& topics, const ListingQuery& query,
                   const std::function<bool(const std::string&)>& in_scope, ListingDone done);
void topic_stats_answer(const ShardSet& shards, TopicCache& topics, const std::string& topic,
                        ListingDone done);
void topic_jobs_answer(const ShardSet& shards, TopicCache& topics, const std::string& topic,
                       const ListingQuery& query, ListingDone done);

}  // namespace dq

// The read-only listing routes of the HTTP API, over common/topic_stats.h and
// common/job_listing.h (the same code dqctl and the admin page use):
//   GET /v1/topics?search=&offset=&limit=          registered topics + counts
//   GET /v1/topics/{topic}/stats                    counts, totals, minutes, days
//   GET /v1/topics/{topic}/jobs?state=&offset=&limit=
// Each takes the request's parameters as text and returns the answer. They
// block on Redis (the blocking store, as the dead-letter routes do): operator
// reads, not the job path.
#pragma once

#include <functional>
#include <string>

#include "common/core/json.h"
#include "common/registry/topic_cache.h"
#include "common/store/job_store.h"

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
  std::string search;  // topics: substring of the name, any case
  std::string state;   // jobs: delayed, ready, working or retrying
  std::string offset;  // "" for the default, 0
  std::string limit;   // "" for the default: 100 topics, 50 jobs; at most 500
};

// in_scope, when given, leaves out the topics it says no to (an API token's scope).
ListingAnswer topics_answer(JobStore& store, TopicCache& topics, const ListingQuery& query,
                            const std::function<bool(const std::string&)>& in_scope = nullptr);
ListingAnswer topic_stats_answer(JobStore& store, TopicCache& topics, const std::string& topic);
ListingAnswer topic_jobs_answer(JobStore& store, TopicCache& topics, const std::string& topic,
                                const ListingQuery& query);

}  // namespace dq

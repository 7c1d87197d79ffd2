#include "server/listing_routes.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/http/http_request.h"
#include "common/registry/topic_json.h"
#include "common/store/job.h"
#include "common/store/job_listing.h"
#include "common/store/topic_stats.h"
#include "server/http_reply.h"

namespace dq {
namespace {

constexpr long kDefaultTopics = 100;
constexpr long kDefaultJobs = 50;

ListingAnswer error(int status, const std::string& message) {
  return {status, Json{{"error", message}}};
}

ListingAnswer failed(const Status& status) {
  return error(http_status_of(status.code()), status.message());
}

// offset >= 0 and 1 <= limit <= kMaxListLimit, or a 400 answer.
bool parse_page(const ListingQuery& query, long default_limit, long* offset, long* limit,
                ListingAnswer* answer) {
  *offset = 0;
  *limit = default_limit;
  if (!parse_count(query.offset, offset) || !parse_count(query.limit, limit) || *limit < 1 ||
      *limit > kMaxListLimit) {
    *answer = error(
        400, "offset must be a whole number >= 0 and limit 1.." + std::to_string(kMaxListLimit));
    return false;
  }
  return true;
}

bool known(TopicCache& topics, const std::string& topic) {
  return valid_topic(topic) && topics.find_or_reload(topic) != nullptr;
}

ListingAnswer unknown_listing_topic(const std::string& topic) {
  return error(404, "unknown topic '" + topic + "'");
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

ListingAnswer topic_answer(TopicCache& topics, const std::string& topic) {
  if (!known(topics, topic)) {
    return unknown_listing_topic(topic);
  }
  return {200, topic_to_json(*topics.find(topic))};
}

void topics_answer(const ShardSet& shards, TopicCache& topics, const ListingQuery& query,
                   const std::function<bool(const std::string&)>& in_scope, ListingDone done) {
  long offset = 0, limit = 0;
  ListingAnswer answer;
  if (!parse_page(query, kDefaultTopics, &offset, &limit, &answer)) {
    return done(std::move(answer));
  }
  topics.refresh_if_older(200);
  std::string search = lower(query.search);
  size_t matching = 0;
  std::vector<std::pair<std::string, bool>> page;  // name, online
  for (const auto& [name, topic] : topics.all()) {
    if (in_scope && !in_scope(name)) {
      continue;
    }
    if (lower(name).find(search) == std::string::npos) {
      continue;
    }
    if (matching++ >= static_cast<size_t>(offset) && page.size() < static_cast<size_t>(limit)) {
      page.emplace_back(name, topic.online);
    }
  }
  std::vector<std::string> names;
  names.reserve(page.size());
  for (const auto& entry : page) {
    names.push_back(entry.first);
  }
  all_topic_stats(shards, names, /*with_series=*/false,
                  [shards, page, matching, offset, limit,
                   done = std::move(done)](Result<std::vector<TopicStats>> stats) {
                    // Registered topics answer even when no shard does; their counts then do not.
                    std::map<std::string, StateCounts> counts;
                    std::vector<std::string> unreachable;
                    if (stats.is_ok()) {
                      for (const auto& entry : *stats) {
                        counts[entry.topic] = entry.now;
                      }
                      if (!stats->empty()) {
                        unreachable = stats->front().unreachable_shards;
                      }
                    } else {
                      unreachable = shards.names;
                    }
                    Json list = Json::array();
                    for (const auto& [name, online] : page) {
                      Json entry{{"name", name}, {"online", online}};
                      if (stats.is_ok()) {
                        entry["now"] = to_json(counts[name]);
                      }
                      list.push_back(std::move(entry));
                    }
                    done({200, Json{{"total", matching},
                                    {"offset", offset},
                                    {"limit", limit},
                                    {"unreachable_shards", unreachable},
                                    {"topics", std::move(list)}}});
                  });
}

void topic_stats_answer(const ShardSet& shards, TopicCache& topics, const std::string& topic,
                        ListingDone done) {
  if (!known(topics, topic)) {
    return done(unknown_listing_topic(topic));
  }
  topic_stats(shards, topic, /*with_series=*/true,
              [done = std::move(done)](Result<TopicStats> stats) {
                if (!stats.is_ok()) {
                  return done(failed(stats.status()));
                }
                done({200, to_json(*stats)});
              });
}

void topic_jobs_answer(const ShardSet& shards, TopicCache& topics, const std::string& topic,
                       const ListingQuery& query, ListingDone done) {
  if (!known(topics, topic)) {
    return done(unknown_listing_topic(topic));
  }
  std::optional<ListState> state = parse_list_state(query.state);
  if (!state) {
    return done(
        error(400, query.state.empty()
                       ? "state is required: delayed, ready, working, retrying or waiting"
                       : "state must be delayed, ready, working, retrying or waiting, not '" +
                             query.state + "'"));
  }
  long offset = 0, limit = 0;
  ListingAnswer answer;
  if (!parse_page(query, kDefaultJobs, &offset, &limit, &answer)) {
    return done(std::move(answer));
  }
  list_topic_jobs(shards, topic, *state, offset, limit, query.id_prefix,
                  [topic, state, offset, limit, id_prefix = query.id_prefix,
                   done = std::move(done)](Result<JobPage> page) {
                    if (!page.is_ok()) {
                      return done(failed(page.status()));
                    }
                    Json body = to_json(*page);
                    body["topic"] = topic;
                    body["state"] = list_state_name(*state);
                    if (!id_prefix.empty()) {
                      body["id_prefix"] = id_prefix;
                    }
                    body["offset"] = offset;
                    body["limit"] = limit;
                    done({200, std::move(body)});
                  });
}

}  // namespace dq

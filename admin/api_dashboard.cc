// The counting and listing parts of the admin API: the dashboard (every
// topic's counts now, one chosen topic's per-minute and per-day series, shard
// health), one topic's stats, and a topic's jobs by state with paging. The
// counting itself is common/topic_stats.h and common/job_listing.h, the same
// code as the public HTTP API's GET /v1/topics/{t}/stats and .../jobs.
#include "admin/admin_app.h"
#include "common/core/clock.h"
#include "common/redis/shard_health.h"
#include "common/store/job_listing.h"
#include "common/store/topic_stats.h"

namespace dq {

void AdminApp::dashboard(Exchange& exchange) {
  auto topics = registry_->list_topics();
  if (!topics.is_ok()) {
    return exchange.reply_error(topics.status());
  }
  std::vector<std::string> names;
  Json online = Json::object();
  for (const Topic& topic : *topics) {
    names.push_back(topic.name);
    online[topic.name] = topic.online;
  }
  auto stats = all_topic_stats(store_, names, false);
  if (!stats.is_ok()) {
    return exchange.reply_error(stats.status());
  }
  Json listed = Json::array();
  for (const TopicStats& one : *stats) {
    Json entry = to_json(one);
    entry["online"] = online.value(one.topic, true);
    listed.push_back(entry);
  }
  // The series: of the topic asked for (?topic=), else of the first one.
  Json series = nullptr;
  std::string chosen = exchange.query("topic");
  if (chosen.empty() && !names.empty()) {
    chosen = names[0];
  }
  if (!chosen.empty() && valid_topic(chosen)) {
    auto detail = topic_stats(store_, chosen, true);
    if (detail.is_ok()) {
      series = to_json(*detail);
    }
  }
  ShardHealthReport report;
  auto read = read_shard_health(config_.pid_file);
  if (read.is_ok()) {
    report = *read;
  }
  bool stale = !read.is_ok() || report.stale(now_ms());
  exchange.reply_json(200, Json{{"topics", listed},
                                {"series", series},
                                {"shards", report.to_json()},
                                {"checker_running", !stale},
                                {"now_ms", now_ms()}});
}

void AdminApp::topic_stats_route(Exchange& exchange, const std::string& topic) {
  auto known = registry_->get_topic(topic);
  if (!known.is_ok()) {
    return exchange.reply_error(known.status());
  }
  auto stats = topic_stats(store_, topic, true);
  if (!stats.is_ok()) {
    return exchange.reply_error(stats.status());
  }
  exchange.reply_json(200, to_json(*stats));
}

void AdminApp::jobs_route(Exchange& exchange, const std::string& topic) {
  if (exchange.method() != "GET") {
    return exchange.reply_error(405, "GET");
  }
  if (!valid_topic(topic)) {
    return exchange.reply_error(400, "not a valid topic name");
  }
  auto state =
      parse_list_state(exchange.query("state").empty() ? "delayed" : exchange.query("state"));
  if (!state) {
    return exchange.reply_error(400, "state: one of delayed, ready, working, retrying");
  }
  auto offset = exchange.query_int("offset", 0, 0, 1000000000);
  auto limit = exchange.query_int("limit", 50, 1, 500);
  if (!offset.is_ok()) {
    return exchange.reply_error(offset.status());
  }
  if (!limit.is_ok()) {
    return exchange.reply_error(limit.status());
  }
  auto page = list_topic_jobs(store_, topic, *state, *offset, *limit);
  if (!page.is_ok()) {
    return exchange.reply_error(page.status());
  }
  Json out = to_json(*page);
  out["offset"] = *offset;
  exchange.reply_json(200, out);
}

}  // namespace dq

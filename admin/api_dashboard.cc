// The counting and listing parts of the admin API: the dashboard (every
// topic's counts now, one chosen topic's per-minute and per-day series, shard
// health), one topic's stats, and a topic's jobs by state with paging. The
// counting itself is common/store/topic_stats.h and common/store/job_listing.h,
// the same asynchronous code as the public HTTP API's GET /v1/topics/{t}/stats
// and .../jobs: each answers from the loop, within [redis] command_timeout_ms.
#include <memory>
#include <optional>

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
  struct Reading {
    std::vector<std::string> names;
    Json online = Json::object();
    std::optional<Result<std::vector<TopicStats>>> all;
    std::optional<Json> series;  // null when no topic or not read
    std::shared_ptr<Exchange> exchange;
  };
  auto reading = std::make_shared<Reading>();
  reading->exchange = exchange.hold();
  for (const Topic& topic : *topics) {
    reading->names.push_back(topic.name);
    reading->online[topic.name] = topic.online;
  }
  auto answer = [this, reading]() {
    if (!reading->all || !reading->series) {
      return;
    }
    Exchange& out = *reading->exchange;
    if (!reading->all->is_ok()) {
      return out.reply_error(reading->all->status());
    }
    Json listed = Json::array();
    std::vector<std::string> unreachable;
    for (const TopicStats& one : **reading->all) {
      Json entry = to_json(one);
      entry["online"] = reading->online.value(one.topic, true);
      listed.push_back(entry);
      unreachable = one.unreachable_shards;
    }
    ShardHealthReport report;
    auto read = read_shard_health(config_.pid_file);
    if (read.is_ok()) {
      report = *read;
    }
    bool stale = !read.is_ok() || report.stale(now_ms());
    out.reply_json(200, Json{{"topics", listed},
                             {"series", *reading->series},
                             {"shards", report.to_json()},
                             {"checker_running", !stale},
                             {"unreachable_shards", unreachable},
                             {"now_ms", now_ms()}});
  };
  // The counts of every topic and, at the same time, the series of the
  // topic asked for (?topic=), else of the first one.
  all_topic_stats(shards(), reading->names, false,
                  [reading, answer](Result<std::vector<TopicStats>> all) {
                    reading->all.emplace(std::move(all));
                    answer();
                  });
  std::string chosen = exchange.query("topic");
  if (chosen.empty() && !reading->names.empty()) {
    chosen = reading->names[0];
  }
  if (chosen.empty() || !valid_topic(chosen)) {
    reading->series = Json(nullptr);
    return answer();
  }
  topic_stats(shards(), chosen, true, [reading, answer](Result<TopicStats> detail) {
    reading->series = detail.is_ok() ? to_json(*detail) : Json(nullptr);
    answer();
  });
}

void AdminApp::topic_stats_route(Exchange& exchange, const std::string& topic) {
  auto known = registry_->get_topic(topic);
  if (!known.is_ok()) {
    return exchange.reply_error(known.status());
  }
  topic_stats(shards(), topic, true, [held = exchange.hold()](Result<TopicStats> stats) {
    if (!stats.is_ok()) {
      return held->reply_error(stats.status());
    }
    held->reply_json(200, to_json(*stats));
  });
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
  int64_t offset = 0;
  int64_t limit = 0;
  if (!exchange.page(&offset, &limit)) {
    return;
  }
  list_topic_jobs(shards(), topic, *state, offset, limit, exchange.query("id_prefix"),
                  [held = exchange.hold(), offset](Result<JobPage> page) {
                    if (!page.is_ok()) {
                      return held->reply_error(page.status());
                    }
                    Json out = to_json(*page);
                    out["offset"] = offset;
                    held->reply_json(200, out);
                  });
}

}  // namespace dq

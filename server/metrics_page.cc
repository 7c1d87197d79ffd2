// Implements the /metrics page (see metrics_page.h).
#include "server/metrics_page.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "common/core/clock.h"
#include "common/core/master_status.h"
#include "common/core/prometheus_text.h"
#include "common/core/shared_metrics.h"
#include "common/redis/shard_health.h"
#include "common/registry/topic_window.h"
#include "common/store/topic_stats.h"
#include "server/circuit_metrics.h"

namespace dq {
namespace {

void queue_metrics(const ShardSet& shards, const Result<std::vector<TopicStats>>& stats,
                   PrometheusText& out) {
  out.family("dq_metrics_queue_scrape_ok", "gauge",
             "1 when every shard answered for the queue series below, 0 when some did not "
             "(their jobs are missing from the numbers; see dq_redis_shard_checked_up).");
  bool complete = stats.is_ok();
  if (stats.is_ok()) {
    for (const auto& topic : *stats) {
      complete = complete && topic.unreachable_shards.empty();
    }
  }
  out.sample("dq_metrics_queue_scrape_ok", {}, complete ? 1 : 0);
  // Which shards the queue series below are missing (each shard is asked
  // within [redis] command_timeout_ms).
  std::vector<std::string> missing = shards.names;
  if (stats.is_ok() && !stats->empty()) {
    missing = stats->front().unreachable_shards;
  }
  out.family("dq_metrics_queue_shard_answered", "gauge",
             "1 when the shard answered for the queue series of this scrape, 0 when it did not "
             "in time.");
  for (const std::string& name : shards.names) {
    bool answered = std::find(missing.begin(), missing.end(), name) == missing.end();
    out.sample("dq_metrics_queue_shard_answered", {{"shard", name}}, answered ? 1 : 0);
  }
  if (!stats.is_ok()) {
    return;
  }

  struct Counter {
    const char* name;
    const char* help;
    int64_t EventCounts::*field;
  };
  static const Counter kCounters[] = {
      {"dq_jobs_added_total", "Jobs accepted (adds), all hosts.", &EventCounts::added},
      {"dq_jobs_delivered_total", "Jobs whose callback answered success.", &EventCounts::delivered},
      {"dq_delivery_failures_total", "Failed delivery attempts (each retry counts).",
       &EventCounts::failed},
      {"dq_jobs_dead_total", "Jobs moved to the dead letters.", &EventCounts::dead},
      {"dq_jobs_deleted_total", "Jobs deleted by a producer or an operator.",
       &EventCounts::deleted},
      {"dq_leases_expired_total", "Leases that expired (a consumer died or hung).",
       &EventCounts::expired},
      {"dq_dead_requeued_total", "Dead letters requeued.", &EventCounts::requeued},
      {"dq_duplicates_settled_total", "Second copies of one id found and removed.",
       &EventCounts::duplicate},
      {"dq_jobs_updated_total", "Pending jobs changed in place (PUT).", &EventCounts::updated},
      {"dq_jobs_ttl_expired_total", "Jobs never delivered: their ttl or expire_at passed.",
       &EventCounts::ttl_expired},
      {"dq_jobs_late_dropped_total",
       "Jobs never delivered: found later than their topic's late_policy (drop_after) allows.",
       &EventCounts::late_dropped},
      {"dq_schedule_ticks_added_total", "Schedule ticks whose job was added.",
       &EventCounts::tick_added},
      {"dq_schedule_ticks_skipped_total",
       "Schedule ticks missed while dq was down and not added (catch-up one or none).",
       &EventCounts::tick_skipped},
      {"dq_jobs_held_by_window_total",
       "Due jobs held for their topic's delivery window (due again at its opening; no attempt "
       "used).",
       &EventCounts::window_held},
  };
  for (const auto& counter : kCounters) {
    out.family(counter.name, "counter", counter.help);
    for (const auto& topic : *stats) {
      out.sample(counter.name, {{"topic", topic.topic}},
                 static_cast<double>(topic.total.*counter.field));
    }
  }
  out.family("dq_jobs", "gauge", "Jobs now held, by topic and state.");
  for (const auto& topic : *stats) {
    const StateCounts& now = topic.now;
    const std::pair<const char*, int64_t> states[] = {
        {"delayed", now.delayed},   {"ready", now.ready}, {"working", now.working},
        {"retrying", now.retrying}, {"dead", now.dead},   {"waiting", now.waiting}};
    for (const auto& [state, value] : states) {
      out.sample("dq_jobs", {{"topic", topic.topic}, {"state", state}}, static_cast<double>(value));
    }
  }
}

// Splits a SharedMetrics key back into its parts.
std::vector<std::string> key_parts(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t separator = key.find('\x1f', start);
    parts.emplace_back(key.substr(start, separator - start));
    if (separator == std::string_view::npos) {
      return parts;
    }
    start = separator + 1;
  }
}

void host_metrics(PrometheusText& out) {
  struct Series {
    Labels labels;
    HistogramView view;
  };
  std::map<std::string, std::vector<Series>> by_kind;
  SharedMetrics::instance().for_each([&](std::string_view key, const HistogramView& view) {
    auto parts = key_parts(key);
    std::string kind = parts[0];
    Labels labels;
    if ((kind == "http" || kind == "legacy") && parts.size() == 3) {
      labels = {{kind == "http" ? "route" : "command", parts[1]}, {"code", parts[2]}};
    } else if ((kind == "delivery" || kind == "lateness") && parts.size() == 2) {
      labels = {{"topic", parts[1]}};
    } else if (kind == "redis_error" && parts.size() == 2) {
      labels = {{"shard", parts[1]}};
    } else if (kind == "log_dropped" && parts.size() == 2) {
      labels = {{"log", parts[1]}};
    } else if (kind == "permit" && parts.size() == 3) {
      labels = {{"topic", parts[1]}};
      kind = "permit_" + parts[2];  // taken, returned, waits
    } else if (kind == "pull" && parts.size() == 3) {
      labels = {{"topic", parts[1]}};
      kind = "pull_" + parts[2];  // reserved, acked, nacked, touched, stale, released
    } else if (kind == "auth" && parts.size() == 3) {
      labels = {{"protocol", parts[1]}, {"reason", parts[2]}};
    } else if (kind == "dead_callback" && parts.size() == 3) {
      labels = {{"topic", parts[1]}, {"outcome", parts[2]}};
    } else {
      return;
    }
    by_kind[kind].push_back({labels, view});
  });
  auto requests = [&](const std::string& kind, const std::string& prefix, const std::string& what) {
    out.family(prefix + "_requests_total", "counter", what + " answered by this host.");
    for (const auto& series : by_kind[kind]) {
      out.sample(prefix + "_requests_total", series.labels, static_cast<double>(series.view.count));
    }
    out.family(prefix + "_request_duration_seconds", "histogram",
               "Time to answer " + what + " on this host.");
    for (const auto& series : by_kind[kind]) {
      out.histogram(prefix + "_request_duration_seconds", series.labels, series.view);
    }
  };
  requests("http", "dq_http", "HTTP requests");
  requests("legacy", "dq_legacy", "legacy protocol requests");
  out.family("dq_delivery_duration_seconds", "histogram",
             "Callback time of delivery attempts made by this host's consumers.");
  for (const auto& series : by_kind["delivery"]) {
    out.histogram("dq_delivery_duration_seconds", series.labels, series.view);
  }
  out.family("dq_delivery_lateness_seconds", "histogram",
             "How long after its due time a delivery attempt started (this host).");
  for (const auto& series : by_kind["lateness"]) {
    out.histogram("dq_delivery_lateness_seconds", series.labels, series.view);
  }
  out.family("dq_redis_command_errors_total", "counter",
             "Redis commands of this host that failed or whose outcome is unknown.");
  for (const auto& series : by_kind["redis_error"]) {
    out.sample("dq_redis_command_errors_total", series.labels,
               static_cast<double>(series.view.count));
  }
  out.family("dq_log_lines_dropped_total", "counter",
             "Log lines this host could not write to its log files (e.g. the disk is full).");
  for (const auto& series : by_kind["log_dropped"]) {
    out.sample("dq_log_lines_dropped_total", series.labels, static_cast<double>(series.view.count));
  }
  out.family("dq_auth_failures_total", "counter",
             "Requests refused for a missing or unknown API token, or a topic out of its scope.");
  for (const auto& series : by_kind["auth"]) {
    out.sample("dq_auth_failures_total", series.labels, static_cast<double>(series.view.count));
  }
  // Caps per topic (docs/delivery.md): permits in use on this host = taken - returned.
  auto permit_family = [&](const std::string& kind, const std::string& name,
                           const std::string& help) {
    out.family(name, "counter", help);
    for (const auto& series : by_kind[kind]) {
      out.sample(name, series.labels, static_cast<double>(series.view.count));
    }
  };
  permit_family("permit_taken", "dq_topic_permits_taken_total",
                "Permits to call a capped topic's callback taken by this host's consumers.");
  permit_family("permit_returned", "dq_topic_permits_returned_total",
                "Permits this host's consumers gave back (call ended, or not used).");
  permit_family("permit_waits", "dq_topic_permit_waits_total",
                "Times a capped topic's ready jobs waited because its cap gave fewer permits "
                "than wanted (this host).");
  // Pull workers (docs/delivery.md, "Pull workers"), answered by this host.
  permit_family("pull_reserved", "dq_pull_reserved_total",
                "Jobs of pull topics handed out by this host's reserves.");
  permit_family("pull_acked", "dq_pull_acked_total", "Pull workers' acks this host accepted.");
  permit_family("pull_nacked", "dq_pull_nacked_total", "Pull workers' nacks this host accepted.");
  permit_family("pull_touched", "dq_pull_touched_total",
                "Pull workers' lease extensions this host accepted.");
  permit_family("pull_stale", "dq_pull_stale_total",
                "Acks, nacks and touches refused (409) for a stale token.");
  permit_family("pull_released", "dq_pull_released_total",
                "Reserved jobs given back because the worker went away before the answer.");
  out.family("dq_dead_callbacks_total", "counter",
             "Dead-letter callback sends by this host's checker: outcome sent (a 2xx took it), "
             "failed (retried later), given_up (a day after the job died), dropped (the topic "
             "has no dead_callback now).");
  for (const auto& series : by_kind["dead_callback"]) {
    out.sample("dq_dead_callbacks_total", series.labels, static_cast<double>(series.view.count));
  }
  out.family("dq_metrics_series_dropped_total", "counter",
             "Observations not recorded because the shared metrics table is full.");
  out.sample("dq_metrics_series_dropped_total", {},
             static_cast<double>(SharedMetrics::instance().overflow()));
}

void shard_metrics(const Config& config, PrometheusText& out) {
  auto checked = read_shard_health(config.pid_file);
  if (!checked.is_ok() || checked->stale(now_ms())) {
    return;
  }
  out.family("dq_redis_shard_persistence_info", "gauge",
             "1 for the persistence mode the checker last saw (aof, rdb, aof+rdb, off).");
  for (const auto& shard : checked->shards) {
    out.sample("dq_redis_shard_persistence_info",
               {{"shard", shard.name},
                {"mode", shard.persistence.empty() ? "unknown" : shard.persistence}},
               1);
  }
}

void children_metrics(const Config& config, PrometheusText& out) {
  auto status = read_master_status(config.pid_file);
  if (!status.is_ok() || !status->contains("children")) {
    return;
  }
  std::map<std::string, int> running;
  std::map<std::string, int64_t> restarts;
  for (const auto& child : (*status)["children"]) {
    std::string role = child.value("role", "");
    running[role] += child.value("state", "") == "running" ? 1 : 0;
    restarts[role] += 0;  // every role appears, with 0 until one respawns
  }
  if (status->contains("restarts_by_role")) {
    for (const auto& [role, count] : (*status)["restarts_by_role"].items()) {
      restarts[role] = count.get<int64_t>();
    }
  }
  out.family("dq_children_running", "gauge", "Children of the master running, by role.");
  for (const auto& [role, count] : running) {
    out.sample("dq_children_running", {{"role", role}}, count);
  }
  out.family("dq_child_restarts_total", "counter",
             "Children respawned after they died, by role, since the master started.");
  for (const auto& [role, count] : restarts) {
    out.sample("dq_child_restarts_total", {{"role", role}}, static_cast<double>(count));
  }
}

// Whether the registry file this server reads is still the one at its
// path (common/registry/registry_file.h).
std::string registry_file_metrics(bool in_place) {
  PrometheusText out;
  out.family("dq_registry_file_ok", "gauge",
             "1 while the registry file ([sqlite] path) this API server reads is the file at "
             "that path; 0 when it was deleted, or replaced by something that is not a dq "
             "registry (the err log and /healthz say which).");
  out.sample("dq_registry_file_ok", {}, in_place ? 1 : 0);
  return out.text();
}

// Whether each topic with a delivery window is open now (this host's clock).
std::string window_metrics(const TopicCache& topics) {
  PrometheusText out;
  out.family("dq_topic_delivery_window_open", "gauge",
             "1 while the topic's delivery window is open, 0 while it is closed (its due jobs "
             "wait for the opening); only topics with a window.");
  int64_t now = now_ms();
  for (const auto& [name, topic] : topics.all()) {
    auto window = parse_topic_window(topic);
    if (window.is_ok() && *window) {
      out.sample("dq_topic_delivery_window_open", {{"topic", name}},
                 (*window)->is_open_at(now) ? 1 : 0);
    }
  }
  return out.text();
}

}  // namespace

void render_metrics(const ShardSet& shards, const TopicCache& topics, const Config& config,
                    std::function<void(std::string)> done) {
  std::vector<std::string> names;
  for (const auto& entry : topics.all()) {
    names.push_back(entry.first);
  }
  // The topics' stats and the receivers' circuit breakers
  // (server/circuit_metrics.h) are asked at once: a stalled shard costs one
  // command timeout, not one per question.
  struct Parts {
    std::optional<std::string> stats_text;
    std::optional<std::string> circuits_text;
    std::function<void(std::string)> done;
    void finish_if_whole() {
      if (stats_text && circuits_text) {
        done(*stats_text + *circuits_text);
      }
    }
  };
  auto parts = std::make_shared<Parts>();
  parts->done = std::move(done);
  std::string host_text =
      registry_file_metrics(topics.file_problem().empty()) + window_metrics(topics);
  all_topic_stats(shards, names, false,
                  [shards, &config, parts, host_text](Result<std::vector<TopicStats>> stats) {
                    parts->stats_text = metrics_text(shards, stats, config) + host_text;
                    parts->finish_if_whole();
                  });
  list_circuits(shards, [parts](CircuitListing listing) {
    parts->circuits_text = circuit_metrics_text(listing);
    parts->finish_if_whole();
  });
}

std::string metrics_text(const ShardSet& shards, const Result<std::vector<TopicStats>>& stats,
                         const Config& config) {
  PrometheusText out;
  queue_metrics(shards, stats, out);
  host_metrics(out);
  shard_metrics(config, out);
  children_metrics(config, out);
  auto checked = read_shard_health(config.pid_file);
  std::string text = out.text();
  if (checked.is_ok() && !checked->stale(now_ms())) {
    text += shard_health_metrics(*checked);
  }
  return text;
}

}  // namespace dq

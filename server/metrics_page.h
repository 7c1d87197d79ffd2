// GET /metrics: the Prometheus page, the same whichever API server answers.
//   queue (from Redis, shared by every host; docs/metrics.md):
//     dq_jobs_added_total, dq_jobs_delivered_total, dq_delivery_failures_total,
//     dq_jobs_dead_total, dq_jobs_deleted_total, dq_leases_expired_total,
//     dq_dead_requeued_total, dq_duplicates_settled_total,
//     dq_jobs_updated_total, dq_jobs_ttl_expired_total,
//     dq_jobs_late_dropped_total, dq_jobs_held_by_window_total   {topic}
//     dq_jobs{topic,state}   delayed|ready|working|retrying|dead|waiting
//     dq_metrics_queue_scrape_ok, dq_metrics_queue_shard_answered{shard}
//   read every shard at once, each within [redis] command_timeout_ms: the
//   page never waits on Redis in the event loop, and a shard that does not
//   answer in time is left out (shard_answered 0).
//   this host (SharedMetrics, kept by the master across reloads):
//     dq_http_requests_total / dq_http_request_duration_seconds {route,code}
//     dq_legacy_requests_total / dq_legacy_request_duration_seconds {command,code}
//     dq_delivery_duration_seconds {topic}, dq_delivery_lateness_seconds {topic}
//     dq_redis_command_errors_total {shard}
//   shards (the checker's view) and children (the master's status file):
//     dq_redis_shard_*, dq_redis_shard_persistence_info {shard,mode},
//     dq_children_running {role}, dq_child_restarts_total {role}
//   the registry: dq_registry_file_ok, dq_topic_delivery_window_open {topic}
//   receivers' circuit breakers (server/circuit_metrics.h, from Redis):
//     dq_circuit_state, dq_circuit_failures, dq_circuit_since_seconds {receiver}
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/registry/topic_cache.h"
#include "common/store/shard_set.h"
#include "common/store/topic_stats.h"

namespace dq {

// Reads the queue's counters, then done(page) from the event loop.
void render_metrics(const ShardSet& shards, const TopicCache& topics, const Config& config,
                    std::function<void(std::string)> done);
// The page from counters already read.
std::string metrics_text(const ShardSet& shards, const Result<std::vector<TopicStats>>& stats,
                         const Config& config);

}  // namespace dq

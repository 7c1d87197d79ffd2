// GET /metrics: the Prometheus page, the same whichever API server answers.
//   queue (from Redis, shared by every host; docs/metrics.md):
//     dq_jobs_added_total, dq_jobs_delivered_total, dq_delivery_failures_total,
//     dq_jobs_dead_total, dq_jobs_deleted_total, dq_leases_expired_total,
//     dq_dead_requeued_total, dq_duplicates_settled_total   {topic}
//     dq_jobs{topic,state}   delayed|ready|working|retrying|dead|held
//   this host (SharedMetrics, kept by the master across reloads):
//     dq_http_requests_total / dq_http_request_duration_seconds {route,code}
//     dq_legacy_requests_total / dq_legacy_request_duration_seconds {command,code}
//     dq_delivery_duration_seconds {topic}, dq_delivery_lateness_seconds {topic}
//     dq_redis_command_errors_total {shard}
//   shards (the checker's view) and children (the master's status file):
//     dq_redis_shard_*, dq_redis_shard_persistence_info {shard,mode},
//     dq_children_running {role}, dq_child_restarts_total {role}
#pragma once

#include <string>

#include "common/core/config.h"
#include "common/registry/topic_cache.h"
#include "common/store/job_store.h"

namespace dq {

std::string render_metrics(JobStore& store, const TopicCache& topics, const Config& config);

}  // namespace dq

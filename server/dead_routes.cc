// HttpApi's dead-letter routes: every shard at once
// (common/store/dead_letters.h), answered from the loop.
//   GET    /v1/topics/{topic}/dead?offset=&limit=
//   DELETE /v1/topics/{topic}/dead
//   POST   /v1/topics/{topic}/dead/requeue   POST /v1/topics/{topic}/dead/{id}/requeue
#include "common/core/json_span.h"
#include "common/core/log.h"
#include "common/http/http_request.h"
#include "common/store/dead_letters.h"
#include "common/store/job_json.h"
#include "server/http_api.h"
#include "server/http_reply.h"
#include "server/job_request.h"

namespace dq {
namespace {

bool known_topic(TopicCache& topics, const std::string& topic) {
  return valid_topic(topic) && topics.find_or_reload(topic) != nullptr;
}

Json unknown_dead_topic(const std::string& topic) {
  return Json{{"error", "unknown topic '" + topic + "'"}};
}

}  // namespace

void HttpApi::list_dead(const Exchange& request, const std::string& topic) {
  if (!known_topic(topics_, topic)) {
    return finish(request, "dead", 404, unknown_dead_topic(topic));
  }
  long offset = 0;
  long limit = 100;
  std::string query(request->query());
  if (!parse_count(query_value(query, "offset"), &offset) ||
      !parse_count(query_value(query, "limit"), &limit) || limit <= 0 || limit > 1000) {
    return finish(request, "dead", 400,
                  Json{{"error", "offset must be a whole number >= 0 and limit 1..1000"}});
  }
  dead_list(shards_, topic, static_cast<size_t>(offset), static_cast<size_t>(limit),
            [this, request, topic](Result<DeadPage> page) {
              if (!page.is_ok()) {
                return finish(request, "dead", http_status_of(page.status().code()),
                              Json{{"error", page.status().message()}});
              }
              std::string jobs = "[";
              for (const auto& dead : page->jobs) {
                jobs += (jobs.size() > 1 ? "," : "") + job_json(dead);
              }
              jobs += "]";
              Json head{{"topic", topic},
                        {"total", page->total},
                        {"unreachable_shards", page->unreachable_shards}};
              finish_text(request, "dead", 200, with_raw_member(dump_json(head), "jobs", jobs));
            });
}

void HttpApi::purge_dead(const Exchange& request, const std::string& topic) {
  if (!known_topic(topics_, topic)) {
    return finish(request, "dead", 404, unknown_dead_topic(topic));
  }
  dead_purge(shards_, topic, [this, request, topic](Result<int64_t> purged) {
    if (!purged.is_ok()) {
      return finish(request, "dead", http_status_of(purged.status().code()),
                    Json{{"error", purged.status().message()}});
    }
    request_log().info("dead-purge {} -> {}", topic, *purged);
    finish(request, "dead", 200, Json{{"topic", topic}, {"purged", *purged}});
  });
}

void HttpApi::requeue_dead(const Exchange& request, const std::string& topic,
                           const std::string& id) {
  if (!known_topic(topics_, topic)) {
    return finish(request, "dead", 404, unknown_dead_topic(topic));
  }
  if (!id.empty()) {
    Status valid = check_id(id);
    if (!valid.is_ok()) {
      return finish(request, "dead", http_status_of(valid.code()),
                    Json{{"error", valid.message()}});
    }
  }
  dead_requeue(shards_, topic, id, [this, request, topic, id](Result<int64_t> requeued) {
    if (!requeued.is_ok()) {
      return finish(request, "dead", http_status_of(requeued.status().code()),
                    Json{{"error", requeued.status().message()}});
    }
    request_log().info("dead-requeue {} {} -> {}", topic, id.empty() ? "--all" : id, *requeued);
    finish(request, "dead", 200, Json{{"topic", topic}, {"requeued", *requeued}});
  });
}

}  // namespace dq

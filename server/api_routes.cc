// HttpApi's routes as one table (method, path pattern, metrics label, who
// may call it, handler) and the dispatch over it. docs/openapi.json describes
// each route; tests/test_openapi.cc holds the two to each other.
#include <cstring>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/http/http_request.h"
#include "server/api_auth.h"
#include "server/http_api.h"
#include "server/listing_routes.h"
#include "server/openapi_json.h"  // generated from docs/openapi.json
#include "server/signing_keys_route.h"

namespace dq {
namespace {

ListingQuery query_of(const HttpExchange& request) {
  std::string query(request.query());
  return {query_value(query, "search"), query_value(query, "state"), query_value(query, "offset"),
          query_value(query, "limit"), query_value(query, "id_prefix")};
}

// The path against a pattern's parts: a literal part must be equal, "{topic}"
// and "{id}" take any one part.
bool matches(const std::vector<std::string>& pattern, const std::vector<std::string>& path) {
  if (pattern.size() != path.size()) {
    return false;
  }
  for (size_t i = 0; i < path.size(); ++i) {
    if (pattern[i][0] != '{' && pattern[i] != path[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

const std::vector<HttpApi::Route>& HttpApi::routes() {
  // A path matches the first pattern that fits it: /jobs/batch before
  // /jobs/{id}, so "batch" is never read as an id.
  static const std::vector<Route> table = {
      {"GET", "/v1/topics/{topic}/jobs", "list", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         topic_jobs_answer(api.shards_, api.topics_, match.topic, query_of(*request),
                           api.listing(request, "list"));
       }},
      {"POST", "/v1/topics/{topic}/jobs", "add", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.add_job(request, match.topic);
       }},
      {"POST", "/v1/topics/{topic}/jobs/batch", "batch", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.add_batch(request, match.topic);
       }},
      {"GET", "/v1/topics/{topic}/jobs/{id}", "get", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.get_job(request, match.topic, match.id);
       }},
      {"DELETE", "/v1/topics/{topic}/jobs/{id}", "del", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.delete_job(request, match.topic, match.id);
       }},
      {"PUT", "/v1/topics/{topic}/jobs/{id}", "update", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.update_job(request, match.topic, match.id);
       }},
      {"POST", "/v1/topics/{topic}/jobs/{id}/run", "run", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.run_job(request, match.topic, match.id);
       }},
      // Pull workers (server/pull_queue.h): the scope an add needs.
      {"GET", "/v1/topics/{topic}/reserve", "reserve", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.pull_.reserve(request, match.topic);
       }},
      {"POST", "/v1/topics/{topic}/ack", "ack_batch", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.pull_.ack_batch(request, match.topic);
       }},
      {"POST", "/v1/topics/{topic}/jobs/{id}/ack", "ack", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.pull_.settle(request, match.topic, match.id, PullQueue::Verb::kAck);
       }},
      {"POST", "/v1/topics/{topic}/jobs/{id}/nack", "nack", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.pull_.settle(request, match.topic, match.id, PullQueue::Verb::kNack);
       }},
      {"POST", "/v1/topics/{topic}/jobs/{id}/touch", "touch", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.pull_.settle(request, match.topic, match.id, PullQueue::Verb::kTouch);
       }},
      {"GET", "/healthz", "healthz", Access::kOpen,
       [](HttpApi& api, const Exchange& request, const RouteMatch&) { api.healthz(request); }},
      {"GET", "/metrics", "metrics", Access::kOpen,
       [](HttpApi& api, const Exchange& request, const RouteMatch&) { api.metrics(request); }},
      {"GET", "/v1/openapi.json", "openapi", Access::kOpen,
       [](HttpApi& api, const Exchange& request, const RouteMatch&) { api.openapi(request); }},
      {"GET", "/v1/signing-keys", "signing_keys", Access::kOpen,  // public keys: no token
       [](HttpApi& api, const Exchange& request, const RouteMatch&) {
         api.topics_.refresh_if_older(1000);  // a key made a moment ago is listed
         std::string topic = query_value(std::string(request->query()), "topic");
         api.finish(request, "signing_keys", 200,
                    signing_keys_answer(api.topics_, topic, now_ms()));
       }},
      {"GET", "/v1/topics", "topics", Access::kAnyToken,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         TokenScope scope = match.scope;
         topics_answer(
             api.shards_, api.topics_, query_of(*request),
             [scope](const std::string& name) { return scope.allows(name); },
             api.listing(request, "topics"));
       }},
      {"GET", "/v1/topics/{topic}", "topic", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.get_topic(request, match.topic);
       }},
      {"PUT", "/v1/topics/{topic}", "topic_write", Access::kTopicAdmin,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.write_topic(request, match.topic, TopicEdit::kReplace);
       }},
      {"PATCH", "/v1/topics/{topic}", "topic_write", Access::kTopicAdmin,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.write_topic(request, match.topic, TopicEdit::kUpdate);
       }},
      {"DELETE", "/v1/topics/{topic}", "topic_write", Access::kTopicAdmin,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.delete_topic(request, match.topic);
       }},
      {"GET", "/v1/topics/{topic}/schedules", "schedules", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.list_schedules(request, match.topic);
       }},
      {"POST", "/v1/topics/{topic}/schedules", "schedules", Access::kTopicAdmin,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.write_schedule(request, match.topic, "POST");
       }},
      {"PATCH", "/v1/topics/{topic}/schedules", "schedules", Access::kTopicAdmin,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.write_schedule(request, match.topic, "PATCH");
       }},
      {"DELETE", "/v1/topics/{topic}/schedules", "schedules", Access::kTopicAdmin,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.write_schedule(request, match.topic, "DELETE");
       }},
      {"GET", "/v1/topics/{topic}/stats", "stats", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         topic_stats_answer(api.shards_, api.topics_, match.topic, api.listing(request, "stats"));
       }},
      {"GET", "/v1/topics/{topic}/dead", "dead", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.list_dead(request, match.topic);
       }},
      {"DELETE", "/v1/topics/{topic}/dead", "dead", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.purge_dead(request, match.topic);
       }},
      {"POST", "/v1/topics/{topic}/dead/requeue", "dead", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.requeue_dead(request, match.topic, "");
       }},
      {"POST", "/v1/topics/{topic}/dead/{id}/requeue", "dead", Access::kTopic,
       [](HttpApi& api, const Exchange& request, const RouteMatch& match) {
         api.requeue_dead(request, match.topic, match.id);
       }},
  };
  return table;
}

std::vector<HttpApi::RouteSpec> HttpApi::route_specs() {
  std::vector<RouteSpec> specs;
  for (const Route& route : routes()) {
    specs.push_back({route.method, route.pattern});
  }
  return specs;
}

void HttpApi::openapi(const Exchange& request) {
  send(request, "openapi", 200, "application/json", kOpenApiJson);
}

void HttpApi::route(const Exchange& request, const std::vector<std::string>& path) {
  // Each pattern split once (routing runs for every add).
  static const std::vector<std::vector<std::string>> parts = [] {
    std::vector<std::vector<std::string>> split;
    for (const Route& route : routes()) {
      split.push_back(path_parts(std::string_view(route.pattern)));
    }
    return split;
  }();
  const std::string& method = request->method();
  // HEAD is answered like GET, without the body (HttpExchange drops it).
  const char* wanted = method == "HEAD" ? "GET" : method.c_str();
  const std::vector<Route>& table = routes();
  // The first pattern the path fits; its routes are next to each other.
  size_t first = 0;
  while (first < table.size() && !matches(parts[first], path)) {
    ++first;
  }
  const Route* found = nullptr;
  size_t end = first;
  for (; end < table.size() && std::strcmp(table[end].pattern, table[first].pattern) == 0; ++end) {
    if (found == nullptr && std::strcmp(wanted, table[end].method) == 0) {
      found = &table[end];
    }
  }
  RouteMatch match;
  if (first < table.size()) {
    for (size_t i = 0; i < path.size(); ++i) {
      if (parts[first][i] == "{topic}") {
        match.topic = path[i];
      } else if (parts[first][i] == "{id}") {
        match.id = path[i];
      }
    }
  }
  match.scope = TokenScope{/*all_topics=*/true, {}, /*admin=*/true};
  const std::string* topic = match.topic.empty() ? nullptr : &match.topic;
  // Under /v1/ a caller without a good token learns nothing, not even which
  // routes exist: no 404 or 405 before the token is checked.
  if (found == nullptr && !path.empty() && path[0] == "v1" &&
      refused_by_auth(request, Access::kTopic, topic, &match.scope)) {
    return;
  }
  if (first == table.size()) {
    return finish(request, "other", 404,
                  Json{{"error", "no such route: " + method + " " + request->target()}});
  }
  if (found == nullptr) {
    std::string allowed;
    for (size_t i = first; i < end; ++i) {
      allowed += (allowed.empty() ? "" : ", ") + std::string(table[i].method);
    }
    request->add_header("Allow", allowed);
    return finish(request, "other", 405, Json{{"error", "method not allowed; use " + allowed}});
  }
  if (refused_by_auth(request, found->access, topic, &match.scope)) {
    return;
  }
  found->handler(*this, request, match);
}

}  // namespace dq

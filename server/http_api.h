// HttpApi: the HTTP/JSON client API, on dq's own HTTP server (server/http_server.h).
// Its routes are one table (server/api_routes.cc), and docs/openapi.json
// describes each (served at GET /v1/openapi.json; tests/test_openapi.cc
// checks the two agree and drives every operation against the description):
//   GET    /v1/openapi.json                   this API's OpenAPI 3.1 description
//   GET    /v1/signing-keys                   the Ed25519 public keys of signed topics
//   GET    /v1/topics                         registered topics and their counts
//   GET    /v1/topics/{topic}                 a topic's settings
//   PUT    /v1/topics/{topic}                 create it or set every field (admin scope)
//   PATCH  /v1/topics/{topic}                 change the fields given (admin scope)
//   DELETE /v1/topics/{topic}                 delete it (?purge=true: with its jobs; admin)
//   GET    /v1/topics/{topic}/stats           counts, totals, per minute and per day
//   GET    /v1/topics/{topic}/schedules       its schedules, each with its next five runs
//   POST   /v1/topics/{topic}/schedules       add a schedule (201; admin scope)
//   PATCH  /v1/topics/{topic}/schedules       pause or resume one ({spec, paused}; admin)
//   DELETE /v1/topics/{topic}/schedules       delete one (?spec=; admin)
//   GET    /v1/topics/{topic}/jobs            list jobs (?state=&offset=&limit=)
//   POST   /v1/topics/{topic}/jobs            add one job (201)
//   POST   /v1/topics/{topic}/jobs/batch      add many (200, a result per job)
//   GET    /v1/topics/{topic}/jobs/{id}       read a job (200)
//   DELETE /v1/topics/{topic}/jobs/{id}       delete a job (204)
//   GET    /v1/topics/{topic}/dead            list dead letters (?offset=&limit=)
//   POST   /v1/topics/{topic}/dead/requeue    requeue all dead letters
//   POST   /v1/topics/{topic}/dead/{id}/requeue
//   DELETE /v1/topics/{topic}/dead            purge dead letters
//   GET    /v1/topics/{topic}/reserve         pull topics: lease ready jobs (long poll)
//   POST   /v1/topics/{topic}/jobs/{id}/ack   pull topics: done ({"token"})
//   POST   /v1/topics/{topic}/jobs/{id}/nack  pull topics: failed attempt (?delay=S)
//   POST   /v1/topics/{topic}/jobs/{id}/touch pull topics: extend the lease
//   POST   /v1/topics/{topic}/ack             pull topics: many acks at once
//   GET    /healthz                           shard states
//   GET    /metrics                           Prometheus text format
// No route waits on Redis in the event loop: the listings, stats, dead
// letters and /metrics ask every shard at once over AsyncJobStore's connections
// (common/store/shard_set.h), each within [redis] command_timeout_ms, and
// answer later; a shard that does not answer in time is named in the answer.
// With [server] require_token = yes every /v1/ route needs an API token
// (server/api_auth.h), and the topic writes one with the admin scope;
// /healthz, /metrics, /v1/openapi.json and /v1/signing-keys stay open.
#pragma once

#include <event2/event.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/config.h"
#include "common/registry/api_tokens.h"
#include "common/registry/registry.h"
#include "common/registry/topic_cache.h"
#include "common/registry/topic_writes.h"
#include "common/store/async_job_store.h"
#include "common/store/shard_set.h"
#include "server/http_exchange.h"
#include "server/http_server.h"
#include "server/listing_routes.h"
#include "server/pull_queue.h"

namespace dq {

class ApiAuth;

class HttpApi {
 public:
  HttpApi(event_base* base, AsyncJobStore& jobs, TopicCache& topics, ApiAuth& auth,
          const Config& config);
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Serves on an inherited listening socket (a copy of fd; fd stays the caller's).
  Status listen(int fd) {
    pull_.start();  // idempotent enough: one listen per process
    return server_.listen(fd);
  }
  // Graceful stop: no new connections (the copy is closed); answers carry
  // "Connection: close". Waiting long polls are answered now.
  void stop_accepting() {
    server_.stop_accepting();
    pull_.stop();
  }
  size_t active() const { return active_; }  // requests not yet answered

  // Every route as (method, path pattern), e.g. ("GET", "/v1/topics/{topic}"):
  // what docs/openapi.json must describe.
  struct RouteSpec {
    std::string method;
    std::string pattern;
  };
  static std::vector<RouteSpec> route_specs();

 private:
  using Exchange = std::shared_ptr<HttpExchange>;
  // Who may call a route when tokens are required.
  enum class Access {
    kOpen,        // anyone: health, metrics, the description, public keys
    kAnyToken,    // any token (GET /v1/topics lists the token's topics)
    kTopic,       // a token whose scope has the path's topic
    kTopicAdmin,  // the same, with the admin scope (topic writes)
  };
  struct RouteMatch {
    std::string topic;  // {topic}, decoded
    std::string id;     // {id}, decoded
    TokenScope scope;   // the token's (all topics when tokens are not required)
  };
  using Handler = void (*)(HttpApi& api, const Exchange& request, const RouteMatch& match);
  struct Route {
    const char* method;   // GET also answers HEAD
    const char* pattern;  // "/v1/topics/{topic}/jobs/{id}"
    const char* label;    // the route in dq_http_* metrics
    Access access;
    Handler handler;
  };
  static const std::vector<Route>& routes();
  void on_request(const Exchange& request);
  void route(const Exchange& request, const std::vector<std::string>& path);
  // A request without a token good for the route is answered 401/403 here
  // (true); *scope is the token's scope otherwise.
  bool refused_by_auth(const Exchange& request, Access access, const std::string* topic,
                       TokenScope* scope);
  void add_job(const Exchange& request, const std::string& topic);
  void add_batch(const Exchange& request, const std::string& topic);
  void get_job(const Exchange& request, const std::string& topic, const std::string& id);
  void delete_job(const Exchange& request, const std::string& topic, const std::string& id);
  // Makes a delayed or retrying job due now (attempts kept): 200 with its
  // state and due time, "moved" false when it was due already.
  void run_job(const Exchange& request, const std::string& topic, const std::string& id);
  // PUT: changes a pending job in place (a new version, delayed): 200 with
  // its new state; no such job: added, the add's 201 (or 200 when it ran).
  void update_job(const Exchange& request, const std::string& topic, const std::string& id);
  // 413 when the request is over [server] max_body_bytes (with room for the
  // fields around the body): answered, true.
  bool refused_as_too_large(const Exchange& request, const std::string& route);
  // server/dead_routes.cc; id "" requeues every dead letter of the topic.
  void list_dead(const Exchange& request, const std::string& topic);
  void purge_dead(const Exchange& request, const std::string& topic);
  void requeue_dead(const Exchange& request, const std::string& topic, const std::string& id);
  // server/topic_routes.cc: PUT, PATCH and DELETE /v1/topics/{topic}
  // through common/registry/topic_writes.h.
  void get_topic(const Exchange& request, const std::string& topic);
  void write_topic(const Exchange& request, const std::string& topic, TopicEdit edit);
  void delete_topic(const Exchange& request, const std::string& topic);
  // server/schedule_routes.cc: a topic's schedules (method POST, PATCH or
  // DELETE) through common/registry/schedule_writes.h.
  void list_schedules(const Exchange& request, const std::string& topic);
  void write_schedule(const Exchange& request, const std::string& topic, const std::string& method);
  // Before a topic write: the version it names (If-Match, or the body's
  // "version") and the context with the registry (opened on the first
  // write); false after answering 400 or 503.
  bool ready_to_write(const Exchange& request, const Json& body, std::optional<int64_t>* version,
                      TopicWriteContext* context);
  void openapi(const Exchange& request);
  // The listing routes (server/listing_routes.h).
  ListingDone listing(const Exchange& request, const std::string& route);
  void healthz(const Exchange& request);
  void metrics(const Exchange& request);
  // Replies and does the bookkeeping every answer needs (counts, Connection).
  void finish(const Exchange& request, const std::string& route, int status, const Json& body);
  // The same with the JSON already serialized (replies that embed raw bodies).
  void finish_text(const Exchange& request, const std::string& route, int status,
                   const std::string& json_text);
  // Counts the answer in the host's shared metrics (route, code, latency).
  void record_answer(const Exchange& request, const std::string& route, int status);
  // Answers, counted: active() goes down by one.
  void send(const Exchange& request, const std::string& route, int status,
            std::string_view content_type, std::string_view body,
            std::string_view body_suffix = {});

  AsyncJobStore& jobs_;
  TopicCache& topics_;
  ApiAuth& auth_;
  const Config& config_;
  size_t active_ = 0;
  std::unique_ptr<Registry> registry_;  // topic writes; opened on the first
  ShardSet shards_;    // AsyncJobStore's connections: dead letters, listings and /metrics
  PullQueue pull_;     // pull topics' reserve, ack, nack, touch (server/pull_queue.h)
  HttpServer server_;  // last: destroyed first, while the rest is still there
};

}  // namespace dq

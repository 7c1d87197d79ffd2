// HttpApi: the HTTP/JSON client API, on dq's own HTTP server (server/http_server.h).
//   GET    /v1/topics                         registered topics and their counts
//   GET    /v1/topics/{topic}/stats           counts, totals, per minute and per day
//   GET    /v1/topics/{topic}/jobs            list jobs (?state=&offset=&limit=)
//   POST   /v1/topics/{topic}/jobs            add one job (201)
//   POST   /v1/topics/{topic}/jobs/batch      add many (200, a result per job)
//   GET    /v1/topics/{topic}/jobs/{id}       read a job (200)
//   DELETE /v1/topics/{topic}/jobs/{id}       delete a job (204)
//   GET    /v1/topics/{topic}/dead            list dead letters (?offset=&limit=)
//   POST   /v1/topics/{topic}/dead/requeue    requeue all dead letters
//   POST   /v1/topics/{topic}/dead/{id}/requeue
//   DELETE /v1/topics/{topic}/dead            purge dead letters
//   GET    /healthz                           shard states
//   GET    /metrics                           Prometheus text format
// No route waits on Redis in the event loop: the listings, stats, dead
// letters and /metrics ask every shard at once over AsyncJobStore's connections
// (common/store/shard_set.h), each within [redis] command_timeout_ms, and
// answer later; a shard that does not answer in time is named in the answer.
// With [server] require_token = yes every /v1/ route needs an API token
// (server/api_auth.h); /healthz and /metrics stay open.
#pragma once

#include <event2/event.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/config.h"
#include "common/registry/api_tokens.h"
#include "common/registry/topic_cache.h"
#include "common/store/async_job_store.h"
#include "common/store/shard_set.h"
#include "server/http_exchange.h"
#include "server/http_server.h"
#include "server/listing_routes.h"

namespace dq {

class ApiAuth;

class HttpApi {
 public:
  HttpApi(event_base* base, AsyncJobStore& jobs, TopicCache& topics, ApiAuth& auth,
          const Config& config);
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Serves on an inherited listening socket (a copy of fd; fd stays the caller's).
  Status listen(int fd) { return server_.listen(fd); }
  // Graceful stop: no new connections (the copy is closed); answers carry
  // "Connection: close".
  void stop_accepting() { server_.stop_accepting(); }
  size_t active() const { return active_; }  // requests not yet answered

 private:
  using Exchange = std::shared_ptr<HttpExchange>;
  void on_request(const Exchange& request);
  void route(const Exchange& request, const std::vector<std::string>& path);
  // A /v1/ request without a token good for its topic is answered 401/403
  // here (true); *scope is the token's scope otherwise.
  bool refused_by_auth(const Exchange& request, const std::vector<std::string>& path,
                       TokenScope* scope);
  void add_job(const Exchange& request, const std::string& topic);
  void add_batch(const Exchange& request, const std::string& topic);
  void get_job(const Exchange& request, const std::string& topic, const std::string& id);
  void delete_job(const Exchange& request, const std::string& topic, const std::string& id);
  void dead_letters(const Exchange& request, const std::string& topic,
                    const std::vector<std::string>& path);
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
  ShardSet shards_;    // AsyncJobStore's connections: dead letters, listings and /metrics
  HttpServer server_;  // last: destroyed first, while the rest is still there
};

}  // namespace dq

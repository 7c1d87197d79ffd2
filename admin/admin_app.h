// AdminApp: everything behind dq-admin's HTTP socket. Pages (one HTML shell
// whose script draws the page named by the path) and static assets are
// embedded in the binary (admin/assets/, cmake/embed_assets.cmake); the page
// reads and changes everything through the JSON API under /api/:
//   POST   /api/login                 {user, password} -> cookie, {user, csrf}
//   POST   /api/logout
//   GET    /api/session               {user, csrf}
//   GET    /api/dashboard             per-topic counts and series, shard health
//   GET    /api/topics?q=&offset=&limit=   POST /api/topics
//   GET|PUT|DELETE /api/topics/{t}    (DELETE ?confirm=yes also deletes its jobs)
//   POST   /api/topics/{t}/test       a sample delivery to the callback URL
//   POST   /api/topics/{t}/purge      {confirm: "<topic>"}: delete every job of it
//   GET    /api/topics/{t}/stats      counts and series of one topic
//   GET    /api/topics/{t}/jobs?state=&offset=&limit=
//   GET|DELETE /api/topics/{t}/jobs/{id}
//   GET    /api/topics/{t}/dead?offset=&limit=    DELETE /api/topics/{t}/dead
//   POST   /api/topics/{t}/dead/requeue  {ids: [...]} or {all: true}
//   DELETE /api/topics/{t}/dead/{id}
//   GET|POST /api/shards             DELETE /api/shards/{host:port}
//   POST   /api/shards/{host:port}/drain   no new job goes to it
//   GET|PUT /api/alerts              POST /api/alerts/test
// Without a session pages redirect to /login and /api/ answers 401; a
// POST/PUT/DELETE without the session's X-CSRF-Token answers 403 and changes
// nothing.
#pragma once

#include <memory>
#include <string>

#include "admin/exchange.h"
#include "admin/login_limiter.h"
#include "admin/sessions.h"
#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/registry/admin_users.h"
#include "common/registry/registry.h"
#include "common/registry/registry_write.h"
#include "common/registry/shard_workflow.h"
#include "common/registry/topic_writes.h"
#include "common/store/job_store.h"
#include "common/store/shard_set.h"

namespace dq {

class AdminApp {
 public:
  // Opens the registry and the users, and connects to the shards on `base`
  // (dq-admin's loop); kUnavailable when the database cannot be opened.
  static Result<std::unique_ptr<AdminApp>> open(const Config& config, event_base* base);

  void handle(Exchange& exchange);
  void housekeeping();  // drops expired sessions
  // Closes the shard connections: requests waiting on them are answered now.
  void shutdown() { shards_.reset(); }

 private:
  AdminApp(const Config& config, event_base* base, std::unique_ptr<Registry> registry,
           std::unique_ptr<AdminUsers> users);
  // The shards the async reads fan out over (empty after shutdown()).
  const ShardSet& shards() const;

  void serve_asset(Exchange& exchange, const std::string& name);
  void login(Exchange& exchange);
  void logout(Exchange& exchange);
  void route_api(Exchange& exchange, const Session& session);

  // api_topics.cc
  void list_topics(Exchange& exchange);
  void create_topic(Exchange& exchange);
  void topic_route(Exchange& exchange, const std::string& name);
  void update_topic(Exchange& exchange, const std::string& name);
  void delete_topic(Exchange& exchange, const std::string& name);
  // A topic's schedules, each with its next five run times (read only:
  // dqctl and the HTTP API edit them).
  void list_schedules(Exchange& exchange, const std::string& name);
  void test_callback(Exchange& exchange, const std::string& name);
  // A versioned write of a topic or the alert settings
  // (common/registry/registry_write.h), through the shared registry when
  // [registry] shared = yes.
  void write_versioned(const ObjectWrite& write, std::function<void(Result<int64_t>)> done);
  Status check_callback_url(const std::string& url);
  TopicWriteContext topic_writes();
  // api_jobs.cc
  void jobs_route(Exchange& exchange, const std::string& topic);
  void job_route(Exchange& exchange, const std::string& topic, const std::string& id);
  // A delayed or retrying job due now, its attempts kept (the Run now button).
  void run_job(Exchange& exchange, const std::string& topic, const std::string& id);
  void purge_topic(Exchange& exchange, const std::string& topic);
  void dead_route(Exchange& exchange, const std::string& topic);
  void dead_requeue(Exchange& exchange, const std::string& topic);
  // api_system.cc
  void shards_route(Exchange& exchange);
  void add_shard(Exchange& exchange);
  // Runs a change of common/registry/shard_workflow.h and answers it.
  void change_shard(Exchange& exchange, const Result<ShardEdit>& change, int status,
                    const Json& answer);
  void drain_shard(Exchange& exchange, const std::string& address);
  void remove_shard(Exchange& exchange, const std::string& address);
  void alerts_route(Exchange& exchange);
  void alerts_test(Exchange& exchange);
  // api_dashboard.cc
  void dashboard(Exchange& exchange);
  // api_circuits.cc
  void circuits_route(Exchange& exchange);
  void topic_stats_route(Exchange& exchange, const std::string& topic);

  const Config& config_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<AdminUsers> users_;
  SessionStore sessions_;
  RepeatLog sweep_errors_{spdlog::level::warn};  // once, then with a count
  LoginLimiter limiter_;
  JobStore store_;  // looking up and deleting one job (blocking)
  std::unique_ptr<OwnedShards> shards_;
  ShardSet no_shards_;
};

}  // namespace dq

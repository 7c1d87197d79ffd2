// The jobs part of the admin API: look up and delete one job, purge a
// topic's jobs (typed confirmation), and its dead letters: browse, requeue
// one / some / all, delete one / all.
#include <memory>
#include <optional>
#include <vector>

#include "admin/admin_app.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/registry/job_waiting.h"
#include "common/store/circuit_listing.h"
#include "common/store/dead_letters.h"
#include "common/store/job_json.h"
#include "common/store/topic_jobs.h"

namespace dq {

void AdminApp::job_route(Exchange& exchange, const std::string& topic, const std::string& id) {
  if (!valid_topic(topic) || !valid_id(id)) {
    return exchange.reply_error(400, "not a valid topic name or job id");
  }
  if (exchange.method() == "GET") {
    auto job = store_.get(topic, id);
    auto known = registry_->get_topic(topic);
    if (!job.is_ok() && job.status().code() == Code::kNotFound && known.is_ok() &&
        known->keep_done_days > 0) {
      // Gone: its final state, while the topic's history keeps it.
      if (auto ended = store_.get_ended(topic, id)) {
        return exchange.reply_json(200, ended_job_json(*ended));
      }
    }
    if (!job.is_ok()) {
      return exchange.reply_error(job.status());
    }
    if (!known.is_ok()) {
      return exchange.reply_json(200, job_to_json(*job));
    }
    Json out = job_to_json(*job);
    auto held = exchange.hold();
    find_job_waiting(shards(), config_.shards, *job, *known,
                     [held, out](const Json& waiting) mutable {
                       if (!waiting.is_null()) {
                         out["waiting"] = waiting;
                       }
                       held->reply_json(200, out);
                     });
    return;
  }
  if (exchange.method() != "DELETE") {
    return exchange.reply_error(405, "GET or DELETE");
  }
  Status deleted = store_.del(topic, id);
  if (!deleted.is_ok()) {
    return exchange.reply_error(deleted);
  }
  err_log().info("dq-admin: job {} of {} deleted", id, topic);
  exchange.reply_json(200, Json{{"deleted", id}});
}

void AdminApp::run_job(Exchange& exchange, const std::string& topic, const std::string& id) {
  if (!valid_topic(topic) || !valid_id(id)) {
    return exchange.reply_error(400, "not a valid topic name or job id");
  }
  auto ran = store_.run_now(topic, id);
  if (!ran.is_ok()) {
    return exchange.reply_error(ran.status());
  }
  err_log().info("dq-admin: job {} of {} run now", id, topic);
  exchange.reply_json(200, Json{{"topic", topic},
                                {"id", id},
                                {"state", state_name(ran->state)},
                                {"due_at_ms", ran->due_ms},
                                {"moved", ran->moved}});
}

// Deletes every job of the topic, pending and dead, after the caller typed
// the topic's name (body {"confirm": "<topic>"}).
void AdminApp::purge_topic(Exchange& exchange, const std::string& topic) {
  auto body = exchange.json_object();
  if (!body.is_ok()) {
    return exchange.reply_error(body.status());
  }
  auto confirm = body->find("confirm");
  if (confirm == body->end() || !confirm->is_string() || confirm->get<std::string>() != topic) {
    return exchange.reply_json(
        400, Json{{"error", "confirm: type the topic's name to purge it"}, {"field", "confirm"}});
  }
  auto known = registry_->get_topic(topic);
  if (!known.is_ok()) {
    return exchange.reply_error(known.status());
  }
  purge_topic_jobs(shards(), topic, [held = exchange.hold(), topic](Result<int64_t> purged) {
    if (!purged.is_ok()) {
      return held->reply_error(purged.status());
    }
    err_log().info("dq-admin: purged {} job(s) of {}", *purged, topic);
    held->reply_json(200, Json{{"purged", *purged}});
  });
}

void AdminApp::dead_route(Exchange& exchange, const std::string& topic) {
  if (!valid_topic(topic)) {
    return exchange.reply_error(400, "not a valid topic name");
  }
  const auto& path = exchange.path();
  const std::string& method = exchange.method();
  if (path.size() == 5 && path[4] == "requeue" && method == "POST") {
    return dead_requeue(exchange, topic);
  }
  if (path.size() == 5 && method == "DELETE") {
    const std::string& id = path[4];
    auto job = store_.get(topic, id);
    if (!job.is_ok()) {
      return exchange.reply_error(job.status());
    }
    if (job->state != JobState::kDead) {
      return exchange.reply_error(409, "job " + id + " is not a dead letter");
    }
    Status deleted = store_.del(topic, id);
    if (!deleted.is_ok()) {
      return exchange.reply_error(deleted);
    }
    return exchange.reply_json(200, Json{{"deleted", id}});
  }
  if (path.size() != 4) {
    return exchange.reply_error(404, "no such route");
  }
  if (method == "DELETE") {
    return dead_purge(shards(), topic, [held = exchange.hold(), topic](Result<int64_t> purged) {
      if (!purged.is_ok()) {
        return held->reply_error(purged.status());
      }
      err_log().info("dq-admin: purged {} dead letter(s) of {}", *purged, topic);
      held->reply_json(200, Json{{"purged", *purged}});
    });
  }
  if (method != "GET") {
    return exchange.reply_error(405, "GET or DELETE");
  }
  int64_t offset = 0;
  int64_t limit = 0;
  if (!exchange.page(&offset, &limit)) {
    return;
  }
  dead_list(shards(), topic, static_cast<size_t>(offset), static_cast<size_t>(limit),
            [held = exchange.hold(), offset](Result<DeadPage> dead) {
              if (!dead.is_ok()) {
                return held->reply_error(dead.status());
              }
              Json jobs = Json::array();
              for (const Job& job : dead->jobs) {
                jobs.push_back(job_to_json(job));
              }
              held->reply_json(200, Json{{"total", dead->total},
                                         {"offset", offset},
                                         {"unreachable_shards", dead->unreachable_shards},
                                         {"jobs", jobs}});
            });
}

// {"ids": ["a", "b"]} requeues those, {"all": true} every dead letter.
void AdminApp::dead_requeue(Exchange& exchange, const std::string& topic) {
  auto body = exchange.json_object();
  if (!body.is_ok()) {
    return exchange.reply_error(body.status());
  }
  std::vector<std::string> wanted;
  auto all_flag = body->find("all");
  if (all_flag != body->end() && *all_flag == true) {
    wanted.emplace_back();  // "": every dead letter
  } else {
    auto ids = body->find("ids");
    if (ids == body->end() || !ids->is_array() || ids->empty()) {
      return exchange.reply_error(400, "ids: a list of job ids, or all: true");
    }
    for (const auto& id : *ids) {
      if (!id.is_string() || !valid_id(id.get<std::string>())) {
        return exchange.reply_error(400, "ids: every id must be a valid job id");
      }
    }
    for (const auto& id : *ids) {
      wanted.push_back(id.get<std::string>());
    }
  }
  // Every id at once; one answer when all have answered (the first failure
  // if any).
  struct Requeue {
    size_t left = 0;
    int64_t requeued = 0;
    std::optional<Status> failed;
  };
  auto state = std::make_shared<Requeue>();
  state->left = wanted.size();
  for (const std::string& id : wanted) {
    dq::dead_requeue(
        shards(), topic, id, [state, held = exchange.hold(), topic](Result<int64_t> one) {
          if (!one.is_ok()) {
            if (!state->failed) {
              state->failed = one.status();
            }
          } else {
            state->requeued += *one;
          }
          if (--state->left > 0) {
            return;
          }
          if (state->failed) {
            return held->reply_error(*state->failed);
          }
          err_log().info("dq-admin: requeued {} dead letter(s) of {}", state->requeued, topic);
          held->reply_json(200, Json{{"requeued", state->requeued}});
        });
  }
}

}  // namespace dq

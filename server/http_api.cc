#include "server/http_api.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "common/core/clock.h"
#include "common/core/json_big_numbers.h"
#include "common/core/json_span.h"
#include "common/core/log.h"
#include "common/core/redact.h"
#include "common/core/shared_metrics.h"
#include "common/http/http_request.h"
#include "common/redis/shard_health.h"
#include "common/registry/job_waiting.h"
#include "common/store/circuit_listing.h"
#include "common/store/dead_letters.h"
#include "common/store/end_memory.h"
#include "common/store/job_json.h"
#include "server/add_request_text.h"
#include "server/api_auth.h"
#include "server/http_reply.h"
#include "server/job_request.h"
#include "server/metrics_page.h"
#include "server/signing_keys_route.h"

namespace dq {
namespace {

// The Retry-After of a 503: a home shard that went down is back, or failed
// over to a replica (Sentinel, a cluster), within seconds in the common case.
constexpr std::string_view kRetryAfterSeconds = "1";

// 201 added; 200 the same job was pending already (a retried add); else the error's.
int added_status(const Result<Added>& added) {
  if (!added.is_ok()) {
    return http_status_of(added.status().code());
  }
  return added->existing ? 200 : 201;
}

// The add's answer, written as dump_json wrote {"topic", "id", "due_at_ms",
// "existing", and for a job that ended "ended_at_ms" and "state"} (nlohmann
// orders an object's keys).
std::string added_text(const AddRequest& add, const Added& added) {
  std::string out;
  out.reserve(96 + add.id.size() + add.topic.size());
  out += "{\"due_at_ms\":";
  out += std::to_string(added.due_ms);
  if (!added.ended.empty()) {
    out += ",\"ended_at_ms\":";
    out += std::to_string(added.ended_at_ms);
  }
  if (added.existing) {
    out += ",\"existing\":true";
  }
  out += ",\"id\":";
  append_json_string(&out, add.id);
  if (!added.ended.empty()) {
    out += ",\"state\":";
    append_json_string(&out, added.ended);
  }
  out += ",\"topic\":";
  append_json_string(&out, add.topic);
  if (added.waiting) {
    out += ",\"waiting\":true";  // for the jobs of its "after"
  }
  out += '}';
  return out;
}

// Parses the request body as JSON; on failure answers 400 and returns false.
bool parse_body(const std::string& text, Json* out, std::string* error) {
  *out = parse_json_any_number(text);
  if (out->is_discarded()) {
    *error = text.empty() ? "request body is empty; expected a JSON object"
                          : "request body is not valid JSON";
    return false;
  }
  return true;
}

}  // namespace

HttpApi::HttpApi(event_base* base, AsyncJobStore& jobs, TopicCache& topics, ApiAuth& auth,
                 const Config& config)
    : jobs_(jobs),
      topics_(topics),
      auth_(auth),
      config_(config),
      shards_{base, jobs.connections(), shard_names(config.shards),
              config.redis_command_timeout_ms},
      pull_(base, jobs, topics, config,
            [this](const Exchange& request, const std::string& route, int status,
                   const std::string& text) { finish_text(request, route, status, text); }),
      server_(base, config, [this](const Exchange& request) { on_request(request); }) {}

void HttpApi::on_request(const Exchange& request) {
  ++active_;
  if (!request->refusal().empty()) {
    return finish(request, "refused", 503, Json{{"error", request->refusal()}});
  }
  const std::string& method = request->method();
  if (method != "GET" && method != "POST" && method != "DELETE" && method != "PUT" &&
      method != "PATCH" && method != "HEAD") {
    return finish(request, "other", 501,
                  Json{{"error", "method " + method +
                                     " is not supported; use GET, POST, PUT, PATCH, DELETE or "
                                     "HEAD"}});
  }
  route(request, path_parts(request->path()));
}

void HttpApi::finish(const Exchange& request, const std::string& route, int status,
                     const Json& body) {
  finish_text(request, route, status, status == 204 ? std::string() : dump_json(body));
}

void HttpApi::finish_text(const Exchange& request, const std::string& route, int status,
                          const std::string& json_text) {
  send(request, route, status, "application/json", json_text, "\n");
}

void HttpApi::send(const Exchange& request, const std::string& route, int status,
                   std::string_view content_type, std::string_view body,
                   std::string_view body_suffix) {
  record_answer(request, route, status);
  if (status == 503) {
    // Nothing was written (a job's home shard is down or refuses writes, or
    // this server is full): the same request may be sent again shortly.
    request->add_header("Retry-After", kRetryAfterSeconds);
  }
  request->answer(status, content_type, body, body_suffix);
  --active_;
}

bool HttpApi::refused_by_auth(const Exchange& request, Access access, const std::string* topic,
                              TokenScope* scope) {
  if (!auth_.required() || access == Access::kOpen) {
    return false;
  }
  const std::string& authorization = request->head().authorization;
  const char* header = authorization.empty() ? nullptr : authorization.c_str();
  // The scope is copied out only for the topic-less routes (GET /v1/topics filters by it).
  auto refused = auth_.check(bearer_token(header), topic, "http", topic ? nullptr : scope,
                             access == Access::kTopicAdmin);
  if (!refused) {
    return false;
  }
  // A token sent in the URL (?token=...) is refused, and not written down.
  request_log().info("{} {} -> {} {}", request->method(), redact_url(request->target()),
                     refused->http_status, refused->reason);
  if (refused->http_status == 401) {
    request->add_header("WWW-Authenticate", "Bearer realm=\"dq\"");
  }
  // "error" says why, as every error of the API does; "reason" (the same
  // why, alone) stays for clients that read it.
  finish(request, "auth", refused->http_status,
         Json{{"error", refused->error + ": " + refused->reason}, {"reason", refused->reason}});
  return true;
}

bool HttpApi::refused_as_too_large(const Exchange& request, const std::string& route) {
  const std::string& text = request->body();
  if (text.size() <= config_.max_body_bytes + 4096) {
    return false;
  }
  finish(request, route, 413,
         Json{{"error",
               "request is " + std::to_string(text.size()) + " bytes, over the body limit of " +
                   std::to_string(config_.max_body_bytes) + " ([server] max_body_bytes)"}});
  return true;
}

void HttpApi::add_job(const Exchange& request, const std::string& topic) {
  const std::string& text = request->body();
  int64_t started = monotonic_ms();
  if (refused_as_too_large(request, "add")) {
    return;
  }
  ParsedAdd parsed = parse_add_text(topic, text, topics_, config_, now_ms());
  if (!parsed.request.is_ok()) {
    const Status& refused = parsed.request.status();
    if (parsed.is_json) {
      request_log().info("add {} {} -> {} {}", topic, parsed.logged_id,
                         http_status_of(refused.code()), refused.message());
    }
    return finish(request, "add", http_status_of(refused.code()),
                  Json{{"error", refused.message()}});
  }
  jobs_.add(std::move(*parsed.request),
            [this, request, started](const AddRequest& add, Result<Added> added) {
              int status = added_status(added);
              int64_t took_ms = monotonic_ms() - started;
              if (!added.is_ok()) {
                request_log().info("add {} {} -> {} {}ms {}", add.topic, add.id, status, took_ms,
                                   added.status().message());
                return finish(request, "add", status, Json{{"error", added.status().message()}});
              }
              request_log().info("add {} {} -> {} {}ms due_at_ms={}", add.topic, add.id, status,
                                 took_ms, added->due_ms);
              finish_text(request, "add", status, added_text(add, *added));
            });
}

void HttpApi::add_batch(const Exchange& request, const std::string& topic) {
  Json batch;
  std::string error;
  const std::string& text = request->body();
  if (!parse_body(text, &batch, &error)) {
    return finish(request, "batch", 400, Json{{"error", error}});
  }
  if (!batch.is_object() || !batch.contains("jobs") || !batch["jobs"].is_array()) {
    return finish(request, "batch", 400, Json{{"error", "expected {\"jobs\": [...]}"}});
  }
  Json& list = batch["jobs"];
  // Each job's raw text, so its body is stored byte for byte.
  std::optional<std::vector<std::string_view>> job_texts;
  if (auto jobs_text = json_member_span(text, "jobs")) {
    job_texts = json_array_spans(*jobs_text);
  }
  if (!job_texts || job_texts->size() != list.size()) {
    return finish(request, "batch", 500, Json{{"error", "cannot find the jobs in the batch text"}});
  }
  if (list.size() > static_cast<size_t>(config_.max_batch_jobs)) {
    return finish(
        request, "batch", 413,
        Json{{"error", "batch has " + std::to_string(list.size()) + " jobs, over the limit of " +
                           std::to_string(config_.max_batch_jobs) + " ([server] max_batch_jobs)"}});
  }
  Status topic_ok = check_topic(topic, topics_);
  if (!topic_ok.is_ok()) {
    return finish(request, "batch", http_status_of(topic_ok.code()),
                  Json{{"error", topic_ok.message()}});
  }

  struct BatchState {
    Json results = Json::array();
    size_t left = 0;
  };
  auto state = std::make_shared<BatchState>();
  state->left = list.size();
  for (size_t i = 0; i < list.size(); ++i) {
    state->results.push_back(Json::object());
  }
  auto one_done = [this, request, state]() {
    if (--state->left == 0) {
      finish(request, "batch", 200, Json{{"results", state->results}});
    }
  };
  if (list.empty()) {
    return finish(request, "batch", 200, Json{{"results", state->results}});
  }
  int64_t now = now_ms();
  for (size_t i = 0; i < list.size(); ++i) {
    Json& slot = state->results[i];
    slot["id"] = list[i].is_object() && list[i].contains("id") ? list[i]["id"] : Json();
    auto built = build_add_request(topic, list[i], (*job_texts)[i], topics_, config_, now);
    if (!built.is_ok()) {
      slot["status"] = http_status_of(built.status().code());
      slot["error"] = built.status().message();
      one_done();
      continue;
    }
    jobs_.add(std::move(*built), [state, i, one_done](const AddRequest& add, Result<Added> added) {
      Json& result = state->results[i];
      result["status"] = added_status(added);
      if (added.is_ok()) {
        result["due_at_ms"] = added->due_ms;
        if (added->existing) {
          result["existing"] = true;
        }
        if (!added->ended.empty()) {
          result["state"] = added->ended;
          result["ended_at_ms"] = added->ended_at_ms;
        }
      } else {
        result["error"] = added.status().message();
      }
      request_log().info("batch-add {} {} -> {}", add.topic, add.id, result["status"].get<int>());
      one_done();
    });
  }
}

void HttpApi::get_job(const Exchange& request, const std::string& topic, const std::string& id) {
  Status ok = check_topic_and_id(topic, id, topics_);
  if (!ok.is_ok()) {
    return finish(request, "get", http_status_of(ok.code()), Json{{"error", ok.message()}});
  }
  jobs_.get(topic, id, [this, request, topic, id](Result<Job> job) {
    const Topic* known = topics_.find(topic);
    if (!job.is_ok() && job.status().code() == Code::kNotFound && known != nullptr &&
        end_memory_of(*known).keeps_history()) {
      // Gone: its final state, while the topic's history keeps it.
      return jobs_.get_ended(topic, id,
                             [this, request, topic, id,
                              missing = job.status().message()](std::optional<EndedJob> ended) {
                               int status = ended ? 200 : 404;
                               request_log().info("get {} {} -> {}", topic, id, status);
                               if (!ended) {
                                 return finish(request, "get", 404, Json{{"error", missing}});
                               }
                               finish(request, "get", 200, ended_job_json(*ended));
                             });
    }
    int status = job.is_ok() ? 200 : http_status_of(job.status().code());
    request_log().info("get {} {} -> {}", topic, id, status);
    if (!job.is_ok()) {
      return finish(request, "get", status, Json{{"error", job.status().message()}});
    }
    if (known == nullptr) {
      return finish_text(request, "get", 200, job_json(*job));
    }
    auto answer = [this, request](const Job& found, const Json& waiting) {
      std::string text = job_json(found);
      if (!waiting.is_null()) {
        text = with_raw_member(std::move(text), "waiting", waiting.dump());
      }
      finish_text(request, "get", 200, text);
    };
    find_job_waiting(shards_, config_.shards, *job, *known,
                     [answer, found = *job](const Json& waiting) { answer(found, waiting); });
  });
}

void HttpApi::delete_job(const Exchange& request, const std::string& topic, const std::string& id) {
  Status ok = check_topic_and_id(topic, id, topics_);
  if (!ok.is_ok()) {
    return finish(request, "del", http_status_of(ok.code()), Json{{"error", ok.message()}});
  }
  const Topic* known = topics_.find(topic);
  int64_t keep_ms = known == nullptr ? 0 : end_memory_of(*known).keep_ms;
  jobs_.del(
      topic, id,
      [this, request, topic, id](const Status& status, bool in_flight) {
        // 202: deleted, but a delivery already under way is not called back.
        int code = !status.is_ok() ? http_status_of(status.code()) : in_flight ? 202 : 204;
        request_log().info("del {} {} -> {}", topic, id, code);
        if (!status.is_ok()) {
          return finish(request, "del", code, Json{{"error", status.message()}});
        }
        if (in_flight) {
          return finish(request, "del", 202, Json{{"deleted", true}, {"delivery_in_flight", true}});
        }
        finish(request, "del", 204, Json());
      },
      keep_ms);
}

void HttpApi::run_job(const Exchange& request, const std::string& topic, const std::string& id) {
  Status ok = check_topic_and_id(topic, id, topics_);
  if (!ok.is_ok()) {
    return finish(request, "run", http_status_of(ok.code()), Json{{"error", ok.message()}});
  }
  jobs_.run_now(topic, id, [this, request, topic, id](Result<RunNow> ran) {
    int code = ran.is_ok() ? 200 : http_status_of(ran.status().code());
    request_log().info("run {} {} -> {}", topic, id, code);
    if (!ran.is_ok()) {
      return finish(request, "run", code, Json{{"error", ran.status().message()}});
    }
    finish(request, "run", 200,
           Json{{"topic", topic},
                {"id", id},
                {"state", state_name(ran->state)},
                {"due_at_ms", ran->due_ms},
                {"moved", ran->moved}});
  });
}

void HttpApi::update_job(const Exchange& request, const std::string& topic, const std::string& id) {
  const std::string& text = request->body();
  if (refused_as_too_large(request, "update")) {
    return;
  }
  Status ok = check_topic_and_id(topic, id, topics_);
  if (!ok.is_ok()) {
    return finish(request, "update", http_status_of(ok.code()), Json{{"error", ok.message()}});
  }
  Json fields;
  std::string error;
  if (!parse_body(text, &fields, &error)) {
    return finish(request, "update", 400, Json{{"error", error}});
  }
  auto built = build_update_request(topic, id, fields, text, topics_, config_, now_ms());
  if (!built.is_ok()) {
    request_log().info("update {} {} -> {} {}", topic, id, http_status_of(built.status().code()),
                       built.status().message());
    return finish(request, "update", http_status_of(built.status().code()),
                  Json{{"error", built.status().message()}});
  }
  jobs_.update(std::move(*built), [this, request, topic, id](Result<Updated> updated) {
    int code = !updated.is_ok()   ? http_status_of(updated.status().code())
               : updated->created ? 201
                                  : 200;
    request_log().info("update {} {} -> {}", topic, id, code);
    if (!updated.is_ok()) {
      return finish(request, "update", code, Json{{"error", updated.status().message()}});
    }
    Json answer{{"topic", topic}, {"id", id}, {"due_at_ms", updated->due_ms}};
    if (updated->created) {
      answer["state"] = "delayed";
      answer["created"] = true;
    } else if (!updated->ended.empty()) {
      // No job was pending and this body ran within the dedup window: as
      // the add answers a retry of it, nothing changed.
      answer["existing"] = true;
      answer["state"] = updated->ended;
      answer["ended_at_ms"] = updated->ended_at_ms;
    } else {
      answer["state"] = "delayed";
      answer["updated"] = true;
      answer["previous_state"] = state_name(updated->previous);
      answer["attempts"] = 0;
    }
    finish(request, "update", code, answer);
  });
}

ListingDone HttpApi::listing(const Exchange& request, const std::string& route) {
  return [this, request, route](const ListingAnswer& answer) {
    finish(request, route, answer.status, answer.body);
  };
}

void HttpApi::healthz(const Exchange& request) {
  Json shards = Json::array();
  bool any_up = false;
  // The redis checker's view (state, reason, since when, safety) beside this
  // process's own connection state; absent while no checker has reported.
  auto checked = read_shard_health(config_.pid_file);
  bool fresh = checked.is_ok() && !checked->stale(now_ms());
  for (const auto& shard : jobs_.health()) {
    const CheckedShard* seen = checked.is_ok() ? checked->find(shard.name) : nullptr;
    // Connected is not enough: one the checker marks down (refusing writes) takes no job.
    bool up = shard.up && !(fresh && seen != nullptr && !seen->up);
    Json entry{{"name", shard.name}, {"up", up}};
    if (!shard.primary.empty()) {
      entry["primary"] = shard.primary;  // a Sentinel-managed shard's resolved primary
    }
    if (!shard.up) {
      entry["error"] = shard.error;
    } else if (!up) {
      entry["error"] = seen->reason;
    }
    if (seen != nullptr) {
      entry["checker"] = seen->to_json();
      // How the shard keeps jobs across a crash (docs/RELIABILITY.md).
      if (!seen->persistence.empty()) {
        entry["persistence"] = {{"appendonly", seen->persistence.rfind("aof", 0) == 0},
                                {"appendfsync", seen->appendfsync},
                                {"rdb_save", seen->rdb_save}};
      }
      // Replicas that could confirm adds ([redis] wait_replicas).
      if (seen->connected_replicas >= 0) {
        entry["connected_replicas"] = seen->connected_replicas;
      }
    }
    shards.push_back(entry);
    any_up = any_up || up;
  }
  Json body{{"status", any_up ? "ok" : "unavailable"}, {"shards", shards}};
  // The registry file this server reads (common/registry/registry_file.h):
  // deleted or replaced under dq, it still serves what it read, and says so.
  topics_.refresh_if_older(config_.registry_refresh_ms);
  const std::string& problem = topics_.file_problem();
  body["registry"] = problem.empty()
                         ? Json{{"path", topics_.sqlite_path()}, {"ok", true}}
                         : Json{{"path", topics_.sqlite_path()}, {"ok", false}, {"error", problem}};
  if (checked.is_ok()) {
    body["checker"] = {{"updated_at_ms", checked->updated_at_ms},
                       {"stale", checked->stale(now_ms())}};
  }
  // 200 while any shard can take jobs: a down shard only delays its own jobs.
  finish(request, "healthz", any_up ? 200 : 503, body);
}

void HttpApi::metrics(const Exchange& request) {
  render_metrics(shards_, topics_, config_, [this, request](const std::string& text) {
    send(request, "metrics", 200, "text/plain; version=0.0.4; charset=utf-8", text);
  });
}

void HttpApi::record_answer(const Exchange& request, const std::string& route, int status) {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - request->started()).count();
  SharedMetrics::instance().observe(SharedMetrics::key({"http", route, std::to_string(status)}),
                                    seconds);
}

}  // namespace dq

// The shards and alerts parts of the admin API. Shards: the checker's live
// view (<pid file>.shards.json) of every [redis] shard and registry shard,
// with each shard's Redis version and jobs held asked directly; adding,
// draining and removing one (common/registry/shard_workflow.h, the same
// code as dqctl shard: a versioned write, shared with every host). Alerts: the SMTP
// and webhook settings (common/alerts/alert_settings.h) and a test send.
#include <hiredis/hiredis.h>

#include "admin/admin_app.h"
#include "common/alerts/alert_test.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/redis/shard_health.h"
#include "common/registry/registry_copy.h"
#include "common/registry/shard_list.h"
#include "common/registry/shard_workflow.h"
#include "common/registry/topic_fields.h"
#include "common/store/keys.h"

namespace dq {
namespace {

constexpr int kProbeConnectMs = 300;
constexpr int kProbeCommandMs = 500;

struct ShardFacts {
  bool reachable = false;
  std::string version;
  int64_t jobs = -1;  // -1: unknown
  int64_t moved = 0;  // jobs moved off it while draining (checker/shard_mover.h)
  std::string error;
};

// Asks the shard itself (a short-lived connection with short timeouts, so a
// dead shard costs the page well under a second).
ShardFacts ask_shard(const ShardAddress& address) {
  ShardFacts facts;
  RedisConnection connection(address, kProbeConnectMs, kProbeCommandMs);
  auto info = connection.command({"INFO", "server"});
  if (!info.is_ok()) {
    facts.error = info.status().message();
    return facts;
  }
  facts.reachable = true;
  if ((*info)->type == REDIS_REPLY_STRING) {
    std::string text((*info)->str, (*info)->len);
    size_t at = text.find("redis_version:");
    if (at != std::string::npos) {
      size_t end = text.find_first_of("\r\n", at);
      facts.version = text.substr(at + 14, end - at - 14);
    }
  }
  // Every job is counted once in {dq}:counts ("topic:state" -> jobs).
  auto counted = connection.command({"HVALS", keys::counts()});
  if (counted.is_ok() && (*counted)->type == REDIS_REPLY_ARRAY) {
    facts.jobs = 0;
    for (size_t i = 0; i < (*counted)->elements; ++i) {
      const redisReply* n = (*counted)->element[i];
      if (n->type == REDIS_REPLY_STRING) {
        facts.jobs += std::strtoll(n->str, nullptr, 10);
      }
    }
  }
  auto moved = connection.command({"GET", keys::moved_out()});
  if (moved.is_ok() && (*moved)->type == REDIS_REPLY_STRING) {
    facts.moved = std::strtoll((*moved)->str, nullptr, 10);
  }
  return facts;
}

Json shard_json(const ShardAddress& address, const std::string& source,
                const ShardHealthReport& report, bool stale) {
  ShardFacts facts = ask_shard(address);
  Json out{{"name", address.name()},   {"source", source},   {"reachable", facts.reachable},
           {"version", facts.version}, {"jobs", facts.jobs}, {"error", facts.error}};
  out["moved"] = facts.moved;
  const CheckedShard* checked = report.find(address.name());
  if (checked != nullptr && !stale) {
    out["checked"] = checked->to_json();
  } else {
    out["checked"] = nullptr;  // not watched by the checker (registry-only, or checker not running)
  }
  return out;
}

// A copy of the config whose Redis timeouts are the probe's: a dead shard
// costs a request well under a second.
Config probe_config(const Config& config) {
  Config probe = config;
  probe.redis_connect_timeout_ms = kProbeConnectMs;
  probe.redis_command_timeout_ms = kProbeCommandMs;
  return probe;
}

// The answer to a shard change of common/registry/shard_workflow.h that
// was refused: 400 or 409 naming the address field, else by its code.
void refuse_change(Exchange& exchange, const Status& status) {
  bool field = status.code() == Code::kInvalid || status.code() == Code::kConflict;
  if (field) {
    return exchange.reply_json(status.code() == Code::kInvalid ? 400 : 409,
                               Json{{"error", status.message()}, {"field", "address"}});
  }
  exchange.reply_error(status);
}

}  // namespace

// Runs a shard change (common/registry/shard_workflow.h) with this page's
// short probe timeouts, and answers `status` with `answer` once written.
void AdminApp::change_shard(Exchange& exchange, const Result<ShardEdit>& change, int status,
                            const Json& answer) {
  if (!change.is_ok()) {
    return refuse_change(exchange, change.status());
  }
  if (change->unchanged) {
    return exchange.reply_json(status, answer);
  }
  std::string what = change->state.empty() ? "removed" : change->state;
  write_versioned(change->write, [held = exchange.hold(), address = change->address, what, status,
                                  answer](Result<int64_t> written) {
    if (!written.is_ok()) {
      return held->reply_error(written.status());
    }
    err_log().info("dq-admin: shard {} {} (version {})", address, what, *written);
    Json out = answer;
    out["version"] = *written;
    held->reply_json(status, out);
  });
}

// Adds a shard: it joins, then takes the ids it is the home of from every
// host once its master has seen it (common/registry/shard_list.h).
void AdminApp::add_shard(Exchange& exchange) {
  auto body = exchange.json_object();
  if (!body.is_ok()) {
    return exchange.reply_error(body.status());
  }
  auto address = body->find("address");
  auto password = body->find("password");
  if (address == body->end() || !address->is_string()) {
    return exchange.reply_json(400, Json{{"error", "address: host:port"}, {"field", "address"}});
  }
  std::string name = address->get<std::string>();
  std::string secret =
      password != body->end() && password->is_string() ? password->get<std::string>() : "";
  change_shard(exchange, plan_shard_add(probe_config(config_), *registry_, name, secret), 201,
               Json{{"added", name}, {"state", "joining"}});
}

void AdminApp::shards_route(Exchange& exchange) {
  if (exchange.method() == "POST") {
    return add_shard(exchange);
  }
  if (exchange.method() != "GET") {
    return exchange.reply_error(405, "GET or POST");
  }
  ShardHealthReport report;
  auto read = read_shard_health(config_.pid_file);
  if (read.is_ok()) {
    report = *read;
  }
  bool stale = !read.is_ok() || report.stale(now_ms());
  auto registry = read_registry_shards(registry_->db());
  if (!registry.is_ok()) {
    return exchange.reply_error(registry.status());
  }
  Json shards = Json::array();
  // The config file's shards, then the registry's (also those this
  // process's generation does not use yet: its master reloads it soon).
  for (const auto& address : merged_shards(config_.shards, *registry)) {
    const RegistryShard* from = find_registry_shard(*registry, address.name());
    Json one = shard_json(address, in_config_file(config_, address.name()) ? "config" : "registry",
                          report, stale);
    one["state"] = from != nullptr ? shown_state(*from, now_ms()) : "active";
    bool used = false;
    for (const auto& shard : config_.shards) {
      used = used || shard.name() == address.name();
    }
    one["in_use"] = used;  // by this host's running generation
    shards.push_back(one);
  }
  for (const auto& row : *registry) {
    if (row.state == "listed") {  // from before registry shards took jobs: unused
      ShardAddress address;
      parse_host_port(row.address, &address.host, &address.port);
      address.password = row.password;
      Json one = shard_json(address, "registry", report, stale);
      one["state"] = row.state;
      one["in_use"] = false;
      shards.push_back(one);
    }
  }
  exchange.reply_json(200, Json{{"shards", shards},
                                {"checker_running", !stale},
                                {"updated_at_ms", report.updated_at_ms}});
}

// Removes a shard once it has drained long enough for every host to have
// stopped placing on it and holds no job, and is in no config file
// (common/registry/shard_workflow.h): removing a shard that holds jobs
// would make them unreachable.
void AdminApp::remove_shard(Exchange& exchange, const std::string& address) {
  change_shard(exchange, plan_shard_remove(probe_config(config_), *registry_, address), 200,
               Json{{"removed", address}});
}

// Drains any host:port shard, of the registry or the config file: no host
// gives it a new job within seconds, and the checker moves its jobs to
// their homes; it can be removed once drained.
void AdminApp::drain_shard(Exchange& exchange, const std::string& address) {
  change_shard(exchange, plan_shard_drain(probe_config(config_), *registry_, address), 200,
               Json{{"draining", address}});
}

void AdminApp::alerts_route(Exchange& exchange) {
  auto settings = load_alert_settings(*registry_);
  auto version = local_version(registry_->db(), "alert_settings", "all");
  if (!settings.is_ok() || !version.is_ok()) {
    return exchange.reply_error(settings.is_ok() ? version.status() : settings.status());
  }
  if (exchange.method() == "GET") {
    Json out = settings->to_json();
    out["version"] = version->version;
    return exchange.reply_json(200, out);
  }
  if (exchange.method() != "PUT") {
    return exchange.reply_error(405, "GET or PUT");
  }
  auto body = exchange.json_object();
  if (!body.is_ok()) {
    return exchange.reply_error(body.status());
  }
  auto named = edit_version(*body, exchange.header("If-Match"));
  if (!named.is_ok()) {
    return exchange.reply_json(400,
                               Json{{"error", named.status().message()}, {"field", "version"}});
  }
  for (const auto& [key, value] : body->items()) {
    // The page shows a stored password as "***": sending that back keeps it.
    if ((key == "smtp_password" && value == "***") || key == "version") {
      continue;
    }
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    Status applied = apply_alert_setting(&*settings, key, text);
    if (!applied.is_ok()) {
      return exchange.reply_json(400, Json{{"error", applied.message()}, {"field", key}});
    }
  }
  AlertSettings saved = *settings;
  // Never versioned yet (no host shared them): the first save makes them.
  PutMode mode = version->version == 0 ? PutMode::kCreate : PutMode::kUpdate;
  ObjectWrite write{find_registry_kind("alert_settings"), "all", mode,
                    mode == PutMode::kCreate ? std::nullopt : *named,
                    [this, saved] { return save_alert_settings(*registry_, config_, saved); }};
  write_versioned(write, [held = exchange.hold(), saved](Result<int64_t> written) {
    if (!written.is_ok()) {
      return held->reply_error(written.status());
    }
    err_log().info("dq-admin: alert settings saved (version {})", *written);
    Json out = saved.to_json();
    out["version"] = *written;
    held->reply_json(200, out);
  });
}

void AdminApp::alerts_test(Exchange& exchange) {
  auto settings = load_alert_settings(*registry_);
  if (!settings.is_ok()) {
    return exchange.reply_error(settings.status());
  }
  bool failed = false;
  auto sent = send_test_alert(*settings, config_, *registry_, "the admin page",
                              config_.alert_send_timeout_ms, &failed);
  if (!sent.is_ok()) {
    return exchange.reply_error(sent.status());
  }
  Json out = *sent;
  out["ok"] = !failed;
  exchange.reply_json(200, out);
}

}  // namespace dq

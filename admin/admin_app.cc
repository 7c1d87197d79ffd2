// AdminApp: routing, assets, login and logout, the session and CSRF checks
// every request goes through (see admin_app.h).
#include "admin/admin_app.h"

#include <cstring>

#include "admin/admin_assets.h"
#include "common/core/clock.h"
#include "common/core/log.h"

namespace dq {
namespace {

constexpr const char* kCookie = "dq_admin";
// Failed logins per window (admin/login_limiter.h): a name from one address,
// an address, a name from every address.
constexpr int kLoginsPerAddressUser = 5;
constexpr int kLoginsPerAddress = 20;
constexpr int kLoginsPerUserEverywhere = 100;
constexpr int64_t kLoginWindowMs = int64_t{5} * 60 * 1000;

const EmbeddedAsset* find_asset(const std::string& name) {
  for (const auto& asset : kAdminAssets) {
    if (name == asset.name) {
      return &asset;
    }
  }
  return nullptr;
}

bool is_page(const std::string& first) {
  static const char* kPages[] = {"topics", "jobs", "dead", "shards", "alerts"};
  for (const char* page : kPages) {
    if (first == page) {
      return true;
    }
  }
  return false;
}

// HttpOnly (no script reads it) and SameSite=Strict (no other site's page
// sends it); Secure only when a TLS proxy says the page is served over https,
// since dq-admin itself speaks plain HTTP on 127.0.0.1 (docs/admin.md).
std::string cookie_header(const std::string& value, int64_t max_age_s, bool secure) {
  return std::string(kCookie) + "=" + value +
         "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(max_age_s) +
         (secure ? "; Secure" : "");
}

}  // namespace

Result<std::unique_ptr<AdminApp>> AdminApp::open(const Config& config, event_base* base) {
  auto users = AdminUsers::open(config.sqlite_path);
  if (!users.is_ok()) {
    return users.status();
  }
  auto registry = Registry::open(config.sqlite_path);
  if (!registry.is_ok()) {
    return registry.status();
  }
  auto first = (*users)->ensure_first_user(config);
  if (!first.is_ok()) {
    err_log().error("dq-admin: first user [admin] user = {} not created: {}", config.admin_user,
                    first.status().message());
  } else if (*first) {
    err_log().info("dq-admin: created the first user {} from {}", config.admin_user,
                   config.admin_password_file);
  }
  return std::unique_ptr<AdminApp>(
      new AdminApp(config, base, std::move(*registry), std::move(*users)));
}

AdminApp::AdminApp(const Config& config, event_base* base, std::unique_ptr<Registry> registry,
                   std::unique_ptr<AdminUsers> users)
    : config_(config),
      registry_(std::move(registry)),
      users_(std::move(users)),
      sessions_(users_->db(), static_cast<int64_t>(config.admin_session_ttl_s) * 1000),
      limiter_(kLoginsPerAddressUser, kLoginsPerAddress, kLoginsPerUserEverywhere, kLoginWindowMs),
      store_(config),
      shards_(std::make_unique<OwnedShards>(base, config)) {
  no_shards_.base = base;
}

const ShardSet& AdminApp::shards() const { return shards_ ? shards_->set() : no_shards_; }

void AdminApp::housekeeping() {
  auto swept = sessions_.sweep();
  if (!swept.is_ok()) {
    sweep_errors_.note("dq-admin: cannot remove expired sessions: " + swept.status().message());
  } else {
    sweep_errors_.clear();
  }
}

void AdminApp::serve_asset(Exchange& exchange, const std::string& name) {
  const EmbeddedAsset* asset = find_asset(name);
  if (asset == nullptr) {
    return exchange.reply_error(404, "no such file");
  }
  exchange.reply(200, asset->content_type, asset->bytes);
}

void AdminApp::handle(Exchange& exchange) {
  const auto& path = exchange.path();
  std::string first = path.empty() ? "" : path[0];
  bool api = first == "api";
  if (first == "static" && path.size() == 2 && exchange.method() == "GET") {
    return serve_asset(exchange, path[1]);
  }
  if (first == "login" && path.size() == 1 && exchange.method() == "GET") {
    return serve_asset(exchange, "login.html");
  }
  if (api && path.size() == 2 && path[1] == "login") {
    if (exchange.method() != "POST") {
      return exchange.reply_error(405, "use POST");
    }
    return login(exchange);
  }

  auto found = sessions_.find(exchange.cookie(kCookie));
  if (!found.is_ok()) {
    return exchange.reply_error(found.status());
  }
  if (!found->has_value()) {
    if (api) {
      return exchange.reply_error(401, "log in first");
    }
    return exchange.redirect("/login");
  }
  const Session& session = **found;
  if (!api) {
    if (exchange.method() != "GET") {
      return exchange.reply_error(405, "pages are GET only");
    }
    if (first.empty() || (is_page(first) && path.size() == 1)) {
      return serve_asset(exchange, "app.html");
    }
    return exchange.reply_error(404, "no such page");
  }
  if (exchange.changes_state() &&
      !same_token(exchange.header("X-CSRF-Token"), session.csrf_token)) {
    return exchange.reply_error(403, "missing or wrong X-CSRF-Token (reload the page)");
  }
  route_api(exchange, session);
}

void AdminApp::login(Exchange& exchange) {
  auto body = exchange.json_object();
  if (!body.is_ok()) {
    return exchange.reply_error(body.status());
  }
  std::string user =
      body->value("user", Json("")).is_string() ? (*body)["user"].get<std::string>() : "";
  std::string password = body->contains("password") && (*body)["password"].is_string()
                             ? (*body)["password"].get<std::string>()
                             : "";
  std::string ip = exchange.peer_ip();
  int64_t now = now_ms();
  int64_t wait = limiter_.wait_s(ip, user, now);
  if (wait > 0) {
    exchange.set_header("Retry-After", std::to_string(wait));
    return exchange.reply_error(
        429, "too many failed logins; try again in " + std::to_string(wait) + " s");
  }
  auto verified = users_->verify(user, password);
  if (!verified.is_ok()) {
    return exchange.reply_error(verified.status());
  }
  if (!*verified) {
    limiter_.failed(ip, user, now);
    err_log().warn("dq-admin: failed login for '{}' from {}", user, ip);
    return exchange.reply_error(401, "wrong user name or password");
  }
  limiter_.succeeded(ip, user);
  auto created = sessions_.create(user);
  if (!created.is_ok()) {
    return exchange.reply_error(created.status());
  }
  exchange.set_header("Set-Cookie", cookie_header(created->token, config_.admin_session_ttl_s,
                                                  exchange.over_https()));
  err_log().info("dq-admin: {} logged in from {}", user, ip);
  exchange.reply_json(200, Json{{"user", user}, {"csrf", created->session.csrf_token}});
}

void AdminApp::logout(Exchange& exchange) {
  Status ended = sessions_.end(exchange.cookie(kCookie));
  if (!ended.is_ok()) {
    return exchange.reply_error(ended);
  }
  exchange.set_header("Set-Cookie", cookie_header("", 0, exchange.over_https()));
  exchange.reply_json(200, Json{{"logged_out", true}});
}

void AdminApp::route_api(Exchange& exchange, const Session& session) {
  const auto& path = exchange.path();
  const std::string& method = exchange.method();
  std::string what = path.size() > 1 ? path[1] : "";
  if (what == "session" && path.size() == 2 && method == "GET") {
    return exchange.reply_json(200, Json{{"user", session.user}, {"csrf", session.csrf_token}});
  }
  if (what == "logout" && path.size() == 2 && method == "POST") {
    return logout(exchange);
  }
  if (what == "dashboard" && path.size() == 2 && method == "GET") {
    return dashboard(exchange);
  }
  if (what == "topics") {
    if (path.size() == 2) {
      if (method == "GET") {
        return list_topics(exchange);
      }
      if (method == "POST") {
        return create_topic(exchange);
      }
      return exchange.reply_error(405, "GET or POST");
    }
    const std::string& topic = path[2];
    if (path.size() == 3) {
      return topic_route(exchange, topic);
    }
    const std::string& part = path[3];
    if (part == "test" && path.size() == 4 && method == "POST") {
      return test_callback(exchange, topic);
    }
    if (part == "purge" && path.size() == 4 && method == "POST") {
      return purge_topic(exchange, topic);
    }
    if (part == "stats" && path.size() == 4 && method == "GET") {
      return topic_stats_route(exchange, topic);
    }
    if (part == "schedules" && path.size() == 4 && method == "GET") {
      return list_schedules(exchange, topic);
    }
    if (part == "jobs" && path.size() == 4) {
      return jobs_route(exchange, topic);
    }
    if (part == "jobs" && path.size() == 5) {
      return job_route(exchange, topic, path[4]);
    }
    if (part == "jobs" && path.size() == 6 && path[5] == "run" && method == "POST") {
      return run_job(exchange, topic, path[4]);
    }
    if (part == "dead") {
      return dead_route(exchange, topic);
    }
  }
  if (what == "shards") {
    if (path.size() == 2) {
      return shards_route(exchange);
    }
    if (path.size() == 3 && method == "DELETE") {
      return remove_shard(exchange, path[2]);
    }
    if (path.size() == 4 && path[3] == "drain" && method == "POST") {
      return drain_shard(exchange, path[2]);
    }
  }
  if (what == "circuits" && path.size() == 2) {
    return circuits_route(exchange);
  }
  if (what == "alerts") {
    if (path.size() == 2) {
      return alerts_route(exchange);
    }
    if (path.size() == 3 && path[2] == "test" && method == "POST") {
      return alerts_test(exchange);
    }
  }
  exchange.reply_error(404, "no such route");
}

}  // namespace dq

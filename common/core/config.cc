// Reads conf/dq.ini with inih. Unknown sections or keys are errors, so a typo
// never silently falls back to a default.
#include "common/core/config.h"

#include <ini.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>

namespace dq {
namespace {

using Values = std::map<std::string, std::string>;  // "section.key" -> value

int collect(void* user, const char* section, const char* name, const char* value) {
  auto* values = static_cast<Values*>(user);
  (*values)[std::string(section) + "." + name] = value;
  return 1;
}

std::string resolve(const std::filesystem::path& base, const std::string& path) {
  if (path.empty()) {
    return path;
  }
  std::filesystem::path p(path);
  if (p.is_absolute()) {
    return p.lexically_normal().string();
  }
  return (base / p).lexically_normal().string();
}

Status parse_int(const std::string& key, const std::string& text, int64_t min, int64_t max,
                 int64_t* out) {
  try {
    size_t used = 0;
    long long value = std::stoll(text, &used);
    if (used != text.size() || value < min || value > max) {
      throw std::out_of_range(key);
    }
    *out = value;
    return Status::ok();
  } catch (const std::exception&) {
    return Status(Code::kInvalid, key + " = '" + text + "' must be an integer from " +
                                      std::to_string(min) + " to " + std::to_string(max));
  }
}

Status parse_bool(const std::string& key, const std::string& text, bool* out) {
  if (text == "yes" || text == "true" || text == "on" || text == "1") {
    *out = true;
  } else if (text == "no" || text == "false" || text == "off" || text == "0") {
    *out = false;
  } else {
    return Status(Code::kInvalid, key + " = '" + text + "' must be yes or no");
  }
  return Status::ok();
}

}  // namespace

bool parse_host_port(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size()) {
    return false;
  }
  std::string port_text = text.substr(colon + 1);
  if (port_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5) {
    return false;
  }
  int value = std::stoi(port_text);
  if (value < 1 || value > 65535) {
    return false;
  }
  *host = text.substr(0, colon);
  *port = value;
  return true;
}

Result<Config> load_config(const std::string& path) {
  Values values;
  int rc = ini_parse(path.c_str(), collect, &values);
  if (rc < 0) {
    return Status(Code::kInvalid, "cannot open config file " + path);
  }
  if (rc > 0) {
    return Status(Code::kInvalid, path + ": syntax error on line " + std::to_string(rc));
  }

  Config config;
  std::filesystem::path absolute = std::filesystem::absolute(path);
  config.path = absolute.lexically_normal().string();
  std::filesystem::path base = absolute.parent_path();

  Status status;
  auto number = [&](const char* key, int64_t min, int64_t max, auto* field) {
    auto it = values.find(key);
    if (it == values.end() || !status.is_ok()) {
      return;
    }
    int64_t value = 0;
    status = parse_int(key, it->second, min, max, &value);
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(value);
  };
  auto text = [&](const char* key, std::string* field) {
    auto it = values.find(key);
    if (it != values.end()) {
      *field = it->second;
    }
  };

  text("server.listen", &config.server_listen);
  number("server.workers", 1, 64, &config.server_workers);
  text("server.legacy_listen", &config.legacy_listen);
  number("server.legacy_reply_timeout_ms", 1, 600000, &config.legacy_reply_timeout_ms);
  number("server.max_body_bytes", 1, kMaxBodyBytesLimit, &config.max_body_bytes);
  number("server.max_batch_jobs", 1, 100000, &config.max_batch_jobs);
  number("server.max_connections", 1, 1000000, &config.max_connections);
  number("server.max_header_bytes", 1024, 1 << 20, &config.max_header_bytes);
  number("server.max_request_bytes", 1024, int64_t{1} << 30, &config.max_request_bytes);
  number("server.request_timeout_ms", 100, 3600000, &config.request_timeout_ms);
  number("server.idle_timeout_ms", 100, 86400000, &config.idle_timeout_ms);
  number("server.legacy_idle_timeout_ms", 100, 86400000, &config.legacy_idle_timeout_ms);
  number("redis.connect_timeout_ms", 1, 600000, &config.redis_connect_timeout_ms);
  number("redis.command_timeout_ms", 1, 600000, &config.redis_command_timeout_ms);
  number("redis.probe_timeout_ms", 1, 600000, &config.redis_probe_timeout_ms);
  number("redis.wait_replicas", 0, 100, &config.redis_wait_replicas);
  number("redis.wait_timeout_ms", 1, 600000, &config.redis_wait_timeout_ms);
  number("delivery.backoff_unit_ms", 1, 86400000, &config.backoff_unit_ms);
  number("delivery.default_max_attempts", 1, 1000, &config.default_max_attempts);
  number("delivery.lease_margin_ms", 200, 3600000, &config.lease_margin_ms);  // below: stale acks
  number("timer.processes", 0, 64, &config.timer_processes);
  number("timer.batch", 1, 100000, &config.timer_batch);
  number("timer.max_sleep_ms", 1, 60000, &config.timer_max_sleep_ms);
  number("consumer.processes", 0, 64, &config.consumer_processes);
  number("consumer.concurrency", 1, 10000, &config.consumer_concurrency);
  number("checker.interval_ms", 50, 600000, &config.checker_interval_ms);
  number("checker.down_after", 1, 1000, &config.checker_down_after);
  number("checker.up_after", 1, 1000, &config.checker_up_after);
  number("checker.memory_warn_percent", 1, 100, &config.memory_warn_percent);
  number("alert.group_window_s", 0, 86400, &config.alert_group_window_s);
  number("alert.send_timeout_ms", 100, 600000, &config.alert_send_timeout_ms);
  number("alert.retry_max_s", 1, 86400, &config.alert_retry_max_s);
  number("master.drain_timeout_ms", 0, 3600000, &config.drain_timeout_ms);
  number("master.registry_refresh_ms", 100, 600000, &config.registry_refresh_ms);
  number("admin.session_ttl_s", 60, int64_t{30} * 86400, &config.admin_session_ttl_s);
  text("admin.listen", &config.admin_listen);
  text("admin.user", &config.admin_user);
  text("admin.password_file", &config.admin_password_file);
  text("sqlite.path", &config.sqlite_path);
  text("log.dir", &config.log_dir);
  text("log.level", &config.log_level);
  text("log.format", &config.log_format);
  number("log.keep_days", 0, 36500, &config.log_keep_days);
  text("master.pid_file", &config.pid_file);
  if (!status.is_ok()) {
    return status;
  }
  // One add carries a body and its id and fields: the request limit must let it in.
  if (config.max_request_bytes < config.max_body_bytes + 4096) {
    return Status(Code::kInvalid, "server.max_request_bytes (" +
                                      std::to_string(config.max_request_bytes) +
                                      ") must be at least server.max_body_bytes + 4096 (" +
                                      std::to_string(config.max_body_bytes + 4096) + ")");
  }

  auto allow_hosts = values.find("consumer.callback_allow_hosts");
  if (allow_hosts != values.end()) {
    std::string list = allow_hosts->second + ",";
    size_t start = 0;
    for (size_t comma = list.find(','); comma != std::string::npos;
         start = comma + 1, comma = list.find(',', start)) {
      std::string host = list.substr(start, comma - start);
      host.erase(0, host.find_first_not_of(" \t"));
      host.erase(host.find_last_not_of(" \t") + 1);
      if (host.find_first_of(" \t/") != std::string::npos) {
        return Status(Code::kInvalid, "consumer.callback_allow_hosts: '" + host +
                                          "' is not a host name (a comma list of hosts)");
      }
      if (!host.empty()) {
        config.callback_allow_hosts.push_back(host);
      }
    }
  }

  auto require_token = values.find("server.require_token");
  if (require_token != values.end()) {
    status = parse_bool("server.require_token", require_token->second, &config.require_token);
    if (!status.is_ok()) {
      return status;
    }
  }
  auto start_local = values.find("redis.start_local");
  if (start_local != values.end()) {
    status = parse_bool("redis.start_local", start_local->second, &config.start_local_redis);
    if (!status.is_ok()) {
      return status;
    }
  }

  auto allow_unsafe = values.find("redis.allow_unsafe");
  if (allow_unsafe != values.end()) {
    status = parse_bool("redis.allow_unsafe", allow_unsafe->second, &config.allow_unsafe_redis);
    if (!status.is_ok()) {
      return status;
    }
  }

  static const std::set<std::string> kKnown = {"server.listen",
                                               "server.workers",
                                               "server.legacy_listen",
                                               "server.legacy_reply_timeout_ms",
                                               "server.max_body_bytes",
                                               "server.max_batch_jobs",
                                               "server.max_connections",
                                               "server.max_header_bytes",
                                               "server.max_request_bytes",
                                               "server.request_timeout_ms",
                                               "server.idle_timeout_ms",
                                               "server.legacy_idle_timeout_ms",
                                               "server.require_token",
                                               "redis.shards",
                                               "redis.connect_timeout_ms",
                                               "redis.command_timeout_ms",
                                               "redis.probe_timeout_ms",
                                               "redis.wait_replicas",
                                               "redis.wait_timeout_ms",
                                               "redis.start_local",
                                               "redis.allow_unsafe",
                                               "checker.interval_ms",
                                               "checker.down_after",
                                               "checker.up_after",
                                               "checker.memory_warn_percent",
                                               "alert.group_window_s",
                                               "alert.send_timeout_ms",
                                               "alert.retry_max_s",
                                               "sqlite.path",
                                               "log.dir",
                                               "log.level",
                                               "log.format",
                                               "log.keep_days",
                                               "delivery.backoff_unit_ms",
                                               "delivery.default_max_attempts",
                                               "delivery.lease_margin_ms",
                                               "timer.processes",
                                               "timer.batch",
                                               "timer.max_sleep_ms",
                                               "consumer.processes",
                                               "consumer.concurrency",
                                               "consumer.callback_allow_hosts",
                                               "admin.listen",
                                               "admin.user",
                                               "admin.password_file",
                                               "admin.session_ttl_s",
                                               "master.pid_file",
                                               "master.drain_timeout_ms",
                                               "master.registry_refresh_ms"};
  for (const auto& entry : values) {
    if (kKnown.count(entry.first) == 0) {
      return Status(Code::kInvalid, path + ": unknown key " + entry.first);
    }
  }

  std::string host;
  int port = 0;
  if (!parse_host_port(config.server_listen, &host, &port)) {
    return Status(Code::kInvalid,
                  "server.listen = '" + config.server_listen + "' is not host:port");
  }
  if (!config.legacy_listen.empty() && !parse_host_port(config.legacy_listen, &host, &port)) {
    return Status(Code::kInvalid,
                  "server.legacy_listen = '" + config.legacy_listen + "' is not host:port");
  }
  if (!config.admin_listen.empty() && !parse_host_port(config.admin_listen, &host, &port)) {
    return Status(Code::kInvalid, "admin.listen = '" + config.admin_listen + "' is not host:port");
  }
  if (config.admin_user.empty() != config.admin_password_file.empty()) {
    return Status(Code::kInvalid, "admin.user and admin.password_file go together");
  }
  auto shards =
      parse_shard_list(values.count("redis.shards") ? values["redis.shards"] : "127.0.0.1:6379");
  if (!shards.is_ok()) {
    return Status(Code::kInvalid, "redis.shards: " + shards.status().message());
  }
  if (shards->empty()) {
    return Status(Code::kInvalid, "redis.shards lists no shard");
  }
  config.shards = *shards;

  static const std::set<std::string> kLevels = {"trace", "debug",    "info", "warn",
                                                "error", "critical", "off"};
  if (kLevels.count(config.log_level) == 0) {
    return Status(Code::kInvalid, "log.level = '" + config.log_level +
                                      "' is not one of trace|debug|info|warn|error|critical|off");
  }

  if (config.log_format != "text" && config.log_format != "json") {
    return Status(Code::kInvalid,
                  "log.format = '" + config.log_format + "' is not one of text|json");
  }

  config.sqlite_path = resolve(base, config.sqlite_path.empty() ? "dq.db" : config.sqlite_path);
  config.log_dir = resolve(base, config.log_dir.empty() ? "logs" : config.log_dir);
  config.admin_password_file = resolve(base, config.admin_password_file);
  config.pid_file =
      config.pid_file.empty() ? config.log_dir + "/dqd.pid" : resolve(base, config.pid_file);
  return config;
}

}  // namespace dq

// The table of config keys (common/core/config_keys.h). A new key is one row
// here, a Config member, and its lines in conf/dq.ini (the test prints them).
#include "common/core/config_keys.h"

#include <algorithm>

namespace dq {
namespace {

ConfigKey integer(const char* section, const char* name, ConfigField field, const char* value,
                  int64_t min, int64_t max, const char* help) {
  return {section, name, ConfigType::kInteger, field, value, min, max, "", help, nullptr};
}

ConfigKey typed(ConfigType type, const char* section, const char* name, ConfigField field,
                const char* value, const char* help, const char* shown = nullptr) {
  return {section, name, type, field, value, 0, 0, "", help, shown};
}

ConfigKey choice(const char* section, const char* name, ConfigField field, const char* value,
                 const char* choices, const char* help) {
  return {section, name, ConfigType::kChoice, field, value, 0, 0, choices, help, nullptr};
}

constexpr auto kBool = ConfigType::kBool;
constexpr auto kText = ConfigType::kText;
constexpr auto kListen = ConfigType::kListen;
constexpr auto kListenOrOff = ConfigType::kListenOrOff;
constexpr auto kPath = ConfigType::kPath;
constexpr int64_t kMinute = 60000;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;

// The table: one key a line, so it reads as a table.
// clang-format off
using C = Config;

std::vector<ConfigKey> server_keys() {
  return {
      typed(kListen, "server", "listen", &C::server_listen, "127.0.0.1:6780", "the HTTP/JSON API"),
      integer("server", "workers", &C::server_workers, "1", 1, 64, "API server processes (dq-server_N), all sharing the listening sockets"),
      typed(kListenOrOff, "server", "legacy_listen", &C::legacy_listen, "127.0.0.1:6789", "the legacy framed protocol of the PHP delay queue (docs/legacy-protocol.md)"),
      integer("server", "legacy_reply_timeout_ms", &C::legacy_reply_timeout_ms, "900", 1, 10 * kMinute, "a legacy request not answered within this gets code 0 \"timeout, outcome unknown\" and its late result is dropped (the PHP client reads with a 1 s timeout, so replies never shift)"),
      integer("server", "max_body_bytes", &C::max_body_bytes, "65536", 1, static_cast<int64_t>(kMaxBodyBytesLimit), "largest accepted job body (bytes of JSON); larger gets 413"),
      integer("server", "max_batch_jobs", &C::max_batch_jobs, "1000", 1, 100000, "most jobs in one batch add"),
      integer("server", "max_connections", &C::max_connections, "10000", 1, 1000000, "open HTTP connections per API server process: at it, the connection idle the longest is closed to make room; when none is idle, one more gets 503 and is closed. Each API process also keeps its connections within its open files limit, which the master raises to the hard limit at start (docs/RELIABILITY.md)"),
      integer("server", "max_header_bytes", &C::max_header_bytes, "65536", 1024, 1 << 20, "an HTTP request line and headers; larger gets 431"),
      integer("server", "max_request_bytes", &C::max_request_bytes, "16777216", 1024, int64_t{1} << 30, "an HTTP request body, batches included; larger gets 413. At least max_body_bytes + 4096"),
      integer("server", "request_timeout_ms", &C::request_timeout_ms, "30000", 100, kHour, "a request must arrive whole within this from its first byte, or its connection is closed (a client sending a byte a second cannot hold one)"),
      integer("server", "idle_timeout_ms", &C::idle_timeout_ms, "120000", 100, kDay, "an HTTP connection that sends nothing for this long is closed"),
      integer("server", "legacy_idle_timeout_ms", &C::legacy_idle_timeout_ms, "300000", 100, kDay, "the legacy port's idle cut, 300 s as the PHP server had. That port also uses max_connections (counted apart from HTTP's), max_body_bytes (+1024 for a frame) and request_timeout_ms, each refused with a code 0 reply (docs/security.md)"),
      typed(kBool, "server", "require_token", &C::require_token, "no", "yes: every HTTP /v1/ request needs \"Authorization: Bearer <token>\" and every legacy request a \"token\" field, scoped to topics (dqctl token add NAME --topics a,b); /healthz and /metrics stay open. no: the API is open to whoever reaches the ports (docs/security.md)"),
  };
}

std::vector<ConfigKey> redis_keys() {
  return {
      typed(ConfigType::kShards, "redis", "shards", &C::shards, "127.0.0.1:6379", "the Redis shards jobs are spread over"),
      integer("redis", "connect_timeout_ms", &C::redis_connect_timeout_ms, "1000", 1, 10 * kMinute, "connecting to a shard"),
      integer("redis", "command_timeout_ms", &C::redis_command_timeout_ms, "2000", 1, 10 * kMinute, "waiting for a shard's answer to a command"),
      integer("redis", "probe_timeout_ms", &C::redis_probe_timeout_ms, "200", 1, 10 * kMinute, "how long an add waits for an id's previous or next home (while a shard joins or drains) to say whether it holds the id; one that does not answer by then makes the add a 503, nothing written (docs/decisions.md, One home per id)"),
      integer("redis", "wait_replicas", &C::redis_wait_replicas, "0", 0, 100, "durability beyond the primary: with N > 0 an add (HTTP, batch, legacy) is answered only after Redis WAIT says N replicas hold it. When fewer confirm within wait_timeout_ms the job IS stored on the primary and the add answers 504 \"replication_timeout: ...\" (legacy: code 0); a retry is safe (200 existing once the replicas confirm). Adds then use a second connection per shard. 0 = off. Deletes do not wait (docs/RELIABILITY.md \"Durability\"). `dqd --check` warns when a shard has fewer connected replicas than this"),
      integer("redis", "wait_timeout_ms", &C::redis_wait_timeout_ms, "1000", 1, 10 * kMinute, "how long an add waits for its wait_replicas confirmations"),
      typed(kBool, "redis", "start_local", &C::start_local_redis, "yes", "when a shard on 127.0.0.1/localhost does not answer at start, dqd starts redis-server for it (data in redis-<port> beside the log dir; AOF with appendfsync always, so a crash of that Redis loses no accepted job)"),
      typed(kBool, "redis", "allow_unsafe", &C::allow_unsafe_redis, "no", "dqd refuses at start (and on reload), and dqd --check fails on, a shard that would silently drop jobs: persistence off (neither AOF nor RDB), RDB snapshots without AOF (a crash loses every job since the last snapshot) or a maxmemory-policy other than noeviction. The message says how to fix it; yes uses such shards anyway (the redis checker keeps reporting them in /healthz and dqctl status)"),
  };
}

std::vector<ConfigKey> storage_and_log_keys() {
  return {
      typed(kPath, "sqlite", "path", &C::sqlite_path, "dq.db", "the SQLite file: topics, extra shards, alert settings, admin users, API tokens"),
      typed(kBool, "registry", "shared", &C::shared_registry, "yes", "yes: topics, alert settings, admin users and API tokens are one registry for every dqd on the same shards, kept on the first of [redis] shards and copied into each host's SQLite file (docs/registry.md), so a topic made on one host is known on all; no: this host's SQLite file alone (a host whose shards no other dq host uses may opt out)"),
      typed(kPath, "log", "dir", &C::log_dir, "logs", "request_YYYYMMDD.log, notify_YYYYMMDD.log and err_YYYYMMDD.log go here"),
      choice("log", "level", &C::log_level, "info", "trace|debug|info|warn|error|critical|off", "the lowest level written"),
      choice("log", "format", &C::log_format, "text", "text|json", "json: one JSON object per line (time, log, process, pid, level, msg) for log shippers"),
      integer("log", "keep_days", &C::log_keep_days, "30", 0, 36500, "the master removes daily files older than this many days (today counts); 0 keeps everything"),
  };
}

std::vector<ConfigKey> job_keys() {
  return {
      integer("delivery", "backoff_unit_ms", &C::backoff_unit_ms, "60000", 1, kDay, "the \"minute\" of the 2n+1 retry schedule (1, 3, 5, ... units)"),
      integer("delivery", "default_max_attempts", &C::default_max_attempts, "10", 1, 1000, "attempts before a job is dead-lettered, unless its topic says otherwise"),
      integer("delivery", "lease_margin_ms", &C::lease_margin_ms, "5000", 200, kHour, "a reserved job's lease is its topic's timeout plus this margin (at least 200: the ack of a transfer that ran its whole timeout must reach Redis in it)"),
      integer("timer", "processes", &C::timer_processes, "1", 0, 64, "timer processes (dq-timer_N); each runs every shard"),
      integer("timer", "batch", &C::timer_batch, "1000", 1, 100000, "most jobs moved by one Lua script call"),
      integer("timer", "max_sleep_ms", &C::timer_max_sleep_ms, "1000", 1, kMinute, "longest sleep between checks when nothing is due (a new earlier job wakes the timer at once)"),
      integer("consumer", "processes", &C::consumer_processes, "2", 0, 64, "consumer processes (dq-consume_N)"),
      integer("consumer", "concurrency", &C::consumer_concurrency, "64", 1, 10000, "deliveries in flight per consumer process"),
      typed(ConfigType::kHosts, "consumer", "callback_allow_hosts", &C::callback_allow_hosts, "", "when set, callback URLs may only name these hosts; callbacks never go to link-local addresses, Redis shards or dq's own listeners"),
  };
}

std::vector<ConfigKey> watch_keys() {
  return {
      integer("checker", "interval_ms", &C::checker_interval_ms, "1000", 50, 10 * kMinute, "dq-redis-checker pings every shard this often and publishes their state in <pid file>.shards.json (read by /healthz, /metrics, dqctl status)"),
      integer("checker", "down_after", &C::checker_down_after, "3", 1, 1000, "failed checks in a row before a shard is down (one alert)"),
      integer("checker", "up_after", &C::checker_up_after, "2", 1, 1000, "good checks in a row before it is up again (one recovery alert, with how long it was down)"),
      integer("checker", "memory_warn_percent", &C::memory_warn_percent, "90", 1, 100, "report a shard whose used memory is above this share of its maxmemory"),
      integer("alert", "group_window_s", &C::alert_group_window_s, "60", 0, 86400, "dead letters of one topic within this window go out in one mail"),
      integer("alert", "send_timeout_ms", &C::alert_send_timeout_ms, "10000", 100, 10 * kMinute, "one SMTP or webhook attempt"),
      integer("alert", "retry_max_s", &C::alert_retry_max_s, "300", 1, 86400, "a failed send is tried again after 1 s, 2 s, 4 s ... at most this far apart"),
  };
}

std::vector<ConfigKey> admin_and_master_keys() {
  return {
      typed(kListenOrOff, "admin", "listen", &C::admin_listen, "127.0.0.1:8088", "the admin web page (dq-admin). It speaks plain HTTP: keep it on 127.0.0.1, or put a TLS proxy in front (with X-Forwarded-Proto: https the session cookie is marked Secure)"),
      typed(kText, "admin", "user", &C::admin_user, "", "the first user, created when there is none yet; goes with password_file. More users: dqctl admin user add NAME"),
      typed(kPath, "admin", "password_file", &C::admin_password_file, "", "the first user's password is this file's first line; when the file does not exist, dq-admin creates it with a random password (readable by its owner only)"),
      integer("admin", "session_ttl_s", &C::admin_session_ttl_s, "28800", 60, 30 * 86400, "a session ends this long after its last use"),
      typed(kPath, "master", "pid_file", &C::pid_file, "", "the master's pid file", "<log dir>/dqd.pid"),
      integer("master", "drain_timeout_ms", &C::drain_timeout_ms, "10000", 0, kHour, "how long children get to finish on stop or reload; consumers get at least the longest topic timeout_ms + [delivery] lease_margin_ms, so a callback in flight finishes and is acked, never delivered twice (docs/decisions.md)"),
      integer("master", "registry_refresh_ms", &C::registry_refresh_ms, "500", 100, 10 * kMinute, "how often children look for topic changes in SQLite (the file is read again only when it changed)"),
  };
}
// clang-format on

std::vector<ConfigKey> all_keys() {
  std::vector<ConfigKey> keys;
  for (auto group : {server_keys, redis_keys, storage_and_log_keys, job_keys, watch_keys,
                     admin_and_master_keys}) {
    std::vector<ConfigKey> part = group();
    keys.insert(keys.end(), part.begin(), part.end());
  }
  return keys;
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = all_keys();
  return keys;
}

namespace {

// Edits (insert, delete, replace one character) from a to b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A typo, not another word: at most a third of the word's letters, and 3.
bool close_enough(const std::string& typed, const std::string& known) {
  size_t allowed = std::min<size_t>(3, std::max<size_t>(1, known.size() / 3));
  return edit_distance(typed, known) <= allowed;
}

std::string as_written(const ConfigKey& key) {
  return "[" + std::string(key.section) + "] " + key.name;
}

// "a", "a or b", "a, b or c".
std::string one_of(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return text;
}

}  // namespace

std::string suggest_config_key(const std::string& key) {
  size_t dot = key.find('.');
  std::string section = dot == std::string::npos ? "" : key.substr(0, dot);
  std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
  std::vector<std::string> same_name;  // the name is right, the section is not
  std::vector<std::string> near;       // a typo of a key
  std::vector<std::string> sections;
  bool section_known = false;
  for (const ConfigKey& entry : config_keys()) {
    if (sections.empty() || sections.back() != entry.section) {
      sections.push_back(entry.section);
    }
    section_known = section_known || section == entry.section;
    bool section_close = section == entry.section || close_enough(section, entry.section);
    if (name == entry.name) {
      same_name.push_back(as_written(entry));
    } else if (section_close && close_enough(name, entry.name)) {
      near.push_back(as_written(entry));
    }
  }
  if (!same_name.empty()) {
    return ": did you mean " + one_of(same_name) + "?";
  }
  if (!near.empty()) {
    return ": did you mean " + one_of(near) + "?";
  }
  if (section.empty()) {
    return " (a key before any [section]; every key belongs to one: dqd --help-config)";
  }
  if (!section_known) {
    return " (there is no section [" + section + "]; the sections are " + one_of(sections) + ")";
  }
  return " ([" + section + "] has no key " + name + "; dqd --help-config lists every key)";
}

const ConfigKey* find_config_key(const std::string& key) {
  for (const ConfigKey& entry : config_keys()) {
    if (entry.key() == key) {
      return &entry;
    }
  }
  return nullptr;
}

}  // namespace dq

// Config: everything dqd reads from its ini file. Each key's name, default,
// type, range and help are one row of common/core/config_keys.cc (shown by
// `dqd --help-config` and in conf/dq.ini); the initializers below are the
// same defaults for a Config built in code (tests/test_config_keys.cc checks
// that they agree). Relative paths are resolved against the file's folder.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/core/shard.h"
#include "common/core/status.h"

namespace dq {

// The largest [server] max_body_bytes accepted. Measured (tests/test_flow.cc,
// docs/decisions.md): 20 jobs of this size go through while small adds keep
// answering; bodies are stored once and never copied by state changes, and a
// reserve stops adding jobs past 4 MiB of bodies.
inline constexpr size_t kMaxBodyBytesLimit = size_t{4} * 1024 * 1024;

struct Config {
  std::string path;  // the ini file itself (absolute)

  // [server]
  std::string server_listen = "127.0.0.1:6780";
  int server_workers = 1;
  std::string legacy_listen = "127.0.0.1:6789";  // empty: legacy protocol off
  // A legacy request not finished by then is answered code 0 "timeout,
  // outcome unknown" (the PHP client gives up after 1 s and would read every
  // later reply one call late); its late result is dropped.
  int legacy_reply_timeout_ms = 900;
  size_t max_body_bytes = size_t{64} * 1024;
  int max_batch_jobs = 1000;
  // HTTP API limits (server/http_server.h); each is answered with JSON.
  int max_connections = 10000;                  // open connections per API server process
  size_t max_header_bytes = size_t{64} * 1024;  // request line and headers
  size_t max_request_bytes =
      size_t{16} * 1024 * 1024;    // a request body (a batch carries many jobs)
  int request_timeout_ms = 30000;  // a request must arrive whole within this from its first byte
  int idle_timeout_ms = 120000;    // a connection that sends nothing is closed after this
  // The legacy port's idle cut: as the PHP server's 300 s, so its producers'
  // long-lived connections behave as before (docs/security.md).
  int legacy_idle_timeout_ms = 300000;
  // Every /v1/ route and legacy request must carry an API token of
  // common/registry/api_tokens.h (docs/security.md); no: today's open API.
  bool require_token = false;

  // [redis]
  std::vector<ShardAddress> shards;
  // The role of each shard that is joining, moving in, draining or drained,
  // by name (from the registry: common/registry/shard_list.h); a shard not
  // named is active. Not a key.
  std::map<std::string, ShardRole> shard_roles;
  // The names of the config file's own [redis] shards, once the registry's
  // were merged into `shards` (empty before). Not a key.
  std::vector<std::string> file_shards;
  int redis_connect_timeout_ms = 1000;
  int redis_command_timeout_ms = 2000;
  // How long an add waits for another shard to say whether it holds the id.
  int redis_probe_timeout_ms = 200;
  // With N > 0 an add is answered 201 only after Redis WAIT N confirms N
  // replicas hold it; fewer within wait_timeout_ms: 504 replication_timeout
  // (the job is on the primary). docs/RELIABILITY.md "Durability".
  int redis_wait_replicas = 0;
  int redis_wait_timeout_ms = 1000;
  bool start_local_redis = true;    // start a redis-server when a loopback shard is down at start
  bool allow_unsafe_redis = false;  // use shards that could silently drop jobs (no persistence,
                                    // an evicting maxmemory-policy)

  // [sqlite]
  std::string sqlite_path;  // default: <config dir>/dq.db

  // [registry]
  bool shared_registry = true;  // one registry for every host, on the first shard

  // [log]
  std::string log_dir;  // default: <config dir>/logs
  std::string log_level = "info";
  std::string log_format = "text";  // text | json (one object per line)
  int log_keep_days = 30;           // daily files kept, today included; 0 keeps all

  // [delivery]
  int64_t backoff_unit_ms = 60000;
  int default_max_attempts = 10;
  int lease_margin_ms = 5000;  // lease = topic timeout + margin

  // [timer]
  int timer_processes = 1;
  int timer_batch = 1000;
  int timer_max_sleep_ms = 1000;

  // [consumer]
  int consumer_processes = 2;
  int consumer_concurrency = 64;
  // When not empty, callbacks may only go to these hosts (common/registry/callback_url.h).
  std::vector<std::string> callback_allow_hosts;

  // [checker]
  int checker_interval_ms = 1000;  // how often every shard is pinged
  int checker_down_after = 3;      // failed checks in a row before a shard is down
  int checker_up_after = 2;        // good checks in a row before it is up again
  int memory_warn_percent = 90;    // used_memory above this share of maxmemory is reported

  // [alert]
  int alert_group_window_s = 60;      // dead letters of one topic within this go in one mail
  int alert_send_timeout_ms = 10000;  // one SMTP or webhook attempt
  int alert_retry_max_s = 300;        // longest pause between attempts of a failed send

  // [admin] (dq-admin, the web page)
  std::string admin_listen = "127.0.0.1:8088";  // empty: no admin page
  std::string admin_user;                       // first user, created at start when no user exists
  std::string admin_password_file;              // its password (first line)
  int admin_session_ttl_s = 8 * 3600;           // a session ends this long after its last use

  // [master]
  std::string pid_file;  // default: <log dir>/dqd.pid
  int drain_timeout_ms = 10000;
  int registry_refresh_ms = 500;  // how often children look for topic changes
};

// Loads and validates the file; the Status says which key is wrong and why,
// with the file and line ("/etc/dq/dq.ini:12: server.workers = ...").
Result<Config> load_config(const std::string& path);
// The same for the file's contents already read (relative paths are still
// resolved against path's folder).
Result<Config> load_config_text(const std::string& path, const std::string& text);

// "host:port" -> host and port; false when malformed.
bool parse_host_port(const std::string& text, std::string* host, int* port);

}  // namespace dq

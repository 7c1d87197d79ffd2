// Shard health as the redis checker (dq-redis-checker) sees it, published in
// <pid file>.shards.json (rewritten atomically, temp file + rename, after
// every round of checks) so servers, timers, consumers, /healthz, /metrics
// and `dqctl status` read it without asking Redis:
//   {"updated_at_ms", "interval_ms", "checker_pid",
//    "shards": [{"name", "up", "reason", "since_ms", "checked_at_ms",
//                "failures", "persistence", "appendfsync", "rdb_save",
//                "eviction_policy",
//                "used_memory", "maxmemory", "connected_replicas",
//                "problems": [...], "refuses_writes", "identity",
//                "counted_jobs", "data_lost_total", "lost_jobs",
//                "lost_at_ms"}]}
// `up` changes only after [checker] down_after failed (up_after good) checks
// in a row; `since_ms` is when it last changed; `reason` says why a shard is
// down (or, when up, what was wrong last).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

struct CheckedShard {
  std::string name;  // host:port, as in [redis] shards
  bool up = true;
  std::string reason;         // why it is down; "" when up and fine
  int64_t since_ms = 0;       // wall clock of the last up/down change (or first check)
  int64_t checked_at_ms = 0;  // wall clock of the last check
  int failures = 0;           // failed checks in a row
  std::string persistence;    // "aof", "rdb", "aof+rdb", "off", "unknown", "" (not checked yet)
  std::string appendfsync;    // with AOF: "always", "everysec", "no" ("?" when CONFIG is refused)
  std::string rdb_save;       // with RDB: the save rule, e.g. "3600 1 300 100"
  std::string eviction_policy;
  int64_t used_memory = 0;
  int64_t maxmemory = 0;
  int connected_replicas = -1;        // INFO replication connected_slaves; -1 unknown
  std::vector<std::string> problems;  // safety problems and warnings, each with its fix
  // Down because it refuses writes (read-only replica, full, cannot
  // persist): it still answers reads, so consumers may still drain it.
  bool refuses_writes = false;
  // checker/shard_identity.h: the dataset's identity, the jobs dq counts on
  // it, and the losses noticed (a restart without its data).
  std::string identity;
  int64_t counted_jobs = 0;
  int64_t data_lost_total = 0;
  int64_t lost_jobs = 0;  // jobs counted on it before the last loss
  int64_t lost_at_ms = 0;

  Json to_json() const;
  static CheckedShard from_json(const Json& json);
};

struct ShardHealthReport {
  int64_t updated_at_ms = 0;
  int interval_ms = 1000;
  pid_t checker_pid = -1;
  std::vector<CheckedShard> shards;

  // The checker has not written for a while (it is dead or hung): its view
  // is no longer news. Stale after max(5 intervals, 5 s).
  bool stale(int64_t now_ms) const;
  const CheckedShard* find(const std::string& name) const;  // nullptr when unknown
  Json to_json() const;
};

std::string shard_health_path(const std::string& pid_file);

Status write_shard_health(const std::string& pid_file, const ShardHealthReport& report);

// kNotFound when the checker has not written one (not running yet, or off).
Result<ShardHealthReport> read_shard_health(const std::string& pid_file);

// Prometheus text for the report (the checker's view of each shard):
//   dq_redis_shard_checked_up, dq_redis_shard_state_since_seconds,
//   dq_redis_shard_safe, dq_redis_shard_used_memory_bytes,
//   dq_redis_shard_maxmemory_bytes, dq_redis_shard_refuses_writes,
//   dq_shard_counted_jobs, dq_shard_lost_jobs, dq_shard_data_lost_total
std::string shard_health_metrics(const ShardHealthReport& report);

// For hot paths (job routing): answers "is this shard down?" from the file,
// re-reading it at most every `recheck_ms` and only when its mtime changed.
// A shard the checker does not know, a missing file and a stale report all
// answer false (not down): the caller's own connection state decides then.
// Not thread-safe: one view per thread or loop.
class ShardHealthView {
 public:
  explicit ShardHealthView(std::string pid_file, int recheck_ms = 100);

  bool is_down(const std::string& shard_name);
  // Down, and not only for refusing writes: reads would fail too.
  bool is_unreachable(const std::string& shard_name);
  // The last report read (refreshed as is_down does); empty when none.
  const ShardHealthReport& report();

 private:
  void refresh();

  std::string path_;
  std::string pid_file_;
  int recheck_ms_;
  int64_t next_check_mono_ms_ = 0;
  int64_t mtime_ns_ = -1;
  ShardHealthReport report_;
};

}  // namespace dq

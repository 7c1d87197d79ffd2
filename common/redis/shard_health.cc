// Implements the shard health file (write, read) and the cached view.
#include "common/redis/shard_health.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "common/core/clock.h"
#include "common/core/json_file.h"

namespace dq {

Json CheckedShard::to_json() const {
  return Json{{"name", name},
              {"up", up},
              {"reason", reason},
              {"since_ms", since_ms},
              {"checked_at_ms", checked_at_ms},
              {"failures", failures},
              {"persistence", persistence},
              {"appendfsync", appendfsync},
              {"rdb_save", rdb_save},
              {"eviction_policy", eviction_policy},
              {"used_memory", used_memory},
              {"maxmemory", maxmemory},
              {"connected_replicas", connected_replicas},
              {"problems", problems},
              {"refuses_writes", refuses_writes},
              {"identity", identity},
              {"counted_jobs", counted_jobs},
              {"data_lost_total", data_lost_total},
              {"lost_jobs", lost_jobs},
              {"lost_at_ms", lost_at_ms}};
}

CheckedShard CheckedShard::from_json(const Json& json) {
  CheckedShard health;
  health.name = json.value("name", std::string());
  health.up = json.value("up", true);
  health.reason = json.value("reason", std::string());
  health.since_ms = json.value("since_ms", int64_t{0});
  health.checked_at_ms = json.value("checked_at_ms", int64_t{0});
  health.failures = json.value("failures", 0);
  health.persistence = json.value("persistence", std::string());
  health.appendfsync = json.value("appendfsync", std::string());
  health.rdb_save = json.value("rdb_save", std::string());
  health.eviction_policy = json.value("eviction_policy", std::string());
  health.used_memory = json.value("used_memory", int64_t{0});
  health.maxmemory = json.value("maxmemory", int64_t{0});
  health.connected_replicas = json.value("connected_replicas", -1);
  health.refuses_writes = json.value("refuses_writes", false);
  health.identity = json.value("identity", std::string());
  health.counted_jobs = json.value("counted_jobs", int64_t{0});
  health.data_lost_total = json.value("data_lost_total", int64_t{0});
  health.lost_jobs = json.value("lost_jobs", int64_t{0});
  health.lost_at_ms = json.value("lost_at_ms", int64_t{0});
  auto problems = json.find("problems");
  if (problems != json.end() && problems->is_array()) {
    for (const auto& problem : *problems) {
      if (problem.is_string()) {
        health.problems.push_back(problem.get<std::string>());
      }
    }
  }
  return health;
}

bool ShardHealthReport::stale(int64_t now) const {
  int64_t limit = std::max<int64_t>(5 * static_cast<int64_t>(interval_ms), 5000);
  return now - updated_at_ms > limit;
}

const CheckedShard* ShardHealthReport::find(const std::string& name) const {
  for (const auto& shard : shards) {
    if (shard.name == name) {
      return &shard;
    }
  }
  return nullptr;
}

Json ShardHealthReport::to_json() const {
  Json list = Json::array();
  for (const auto& shard : shards) {
    list.push_back(shard.to_json());
  }
  return Json{{"updated_at_ms", updated_at_ms},
              {"interval_ms", interval_ms},
              {"checker_pid", checker_pid},
              {"shards", list}};
}

std::string shard_health_metrics(const ShardHealthReport& report) {
  struct Gauge {
    const char* name;
    const char* help;
    std::string (*value)(const CheckedShard&);
  };
  static const Gauge kGauges[] = {
      {"dq_redis_shard_checked_up", "1 when the redis checker counts the shard as up.",
       [](const CheckedShard& s) { return std::string(s.up ? "1" : "0"); }},
      {"dq_redis_shard_state_since_seconds",
       "Unix time of the shard's last up/down change, as the redis checker saw it.",
       [](const CheckedShard& s) { return std::to_string(s.since_ms / 1000); }},
      {"dq_redis_shard_safe",
       "1 unless the shard could silently drop jobs (persistence off, evicting policy).",
       [](const CheckedShard& s) {
         bool unsafe = s.persistence == "off" ||
                       (!s.eviction_policy.empty() && s.eviction_policy != "noeviction");
         return std::string(unsafe ? "0" : "1");
       }},
      {"dq_redis_shard_used_memory_bytes", "used_memory of the shard at the last safety check.",
       [](const CheckedShard& s) { return std::to_string(s.used_memory); }},
      {"dq_redis_shard_maxmemory_bytes", "maxmemory of the shard (0: no limit).",
       [](const CheckedShard& s) { return std::to_string(s.maxmemory); }},
      {"dq_redis_shard_refuses_writes",
       "1 when the shard answers but refuses writes (read-only replica, full, cannot persist).",
       [](const CheckedShard& s) { return std::string(s.refuses_writes ? "1" : "0"); }},
      {"dq_shard_counted_jobs", "Jobs dq counts on the shard ({dq}:counts) at the last check.",
       [](const CheckedShard& s) { return std::to_string(s.counted_jobs); }},
      {"dq_shard_lost_jobs",
       "Jobs dq had counted on the shard before it last came back without its data.",
       [](const CheckedShard& s) { return std::to_string(s.lost_jobs); }},
      {"dq_shard_data_lost_total",
       "Times the shard came back without its data (its identity key gone or another) while "
       "dq counted jobs on it.",
       [](const CheckedShard& s) { return std::to_string(s.data_lost_total); }},
  };
  std::string text;
  for (const auto& gauge : kGauges) {
    std::string_view name(gauge.name);
    bool counter = name.size() > 6 && name.substr(name.size() - 6) == "_total";
    text += std::string("# HELP ") + gauge.name + " " + gauge.help + "\n# TYPE " + gauge.name +
            (counter ? " counter\n" : " gauge\n");
    for (const auto& shard : report.shards) {
      text +=
          std::string(gauge.name) + "{shard=\"" + shard.name + "\"} " + gauge.value(shard) + "\n";
    }
  }
  return text;
}

std::string shard_health_path(const std::string& pid_file) { return pid_file + ".shards.json"; }

Status write_shard_health(const std::string& pid_file, const ShardHealthReport& report) {
  return write_json_file(shard_health_path(pid_file), report.to_json());
}

Result<ShardHealthReport> read_shard_health(const std::string& pid_file) {
  auto read = read_json_object_file(shard_health_path(pid_file), "shard health file");
  if (!read.is_ok()) {
    return read.status();
  }
  const Json& parsed = *read;
  ShardHealthReport report;
  report.updated_at_ms = parsed.value("updated_at_ms", int64_t{0});
  report.interval_ms = parsed.value("interval_ms", 1000);
  report.checker_pid = parsed.value("checker_pid", -1);
  auto shards = parsed.find("shards");
  if (shards != parsed.end() && shards->is_array()) {
    for (const auto& shard : *shards) {
      if (shard.is_object()) {
        report.shards.push_back(CheckedShard::from_json(shard));
      }
    }
  }
  return report;
}

ShardHealthView::ShardHealthView(std::string pid_file, int recheck_ms)
    : path_(shard_health_path(pid_file)), pid_file_(std::move(pid_file)), recheck_ms_(recheck_ms) {}

void ShardHealthView::refresh() {
  int64_t now = monotonic_ms();
  if (now < next_check_mono_ms_) {
    return;
  }
  next_check_mono_ms_ = now + recheck_ms_;
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0) {
    mtime_ns_ = -1;
    report_ = ShardHealthReport();
    return;
  }
  int64_t mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  if (mtime_ns == mtime_ns_) {
    return;
  }
  auto read = read_shard_health(pid_file_);
  if (!read.is_ok()) {
    return;  // being replaced right now: try again next time
  }
  mtime_ns_ = mtime_ns;
  report_ = std::move(*read);
}

bool ShardHealthView::is_down(const std::string& shard_name) {
  refresh();
  if (report_.stale(now_ms())) {
    return false;
  }
  const CheckedShard* shard = report_.find(shard_name);
  return shard != nullptr && !shard->up;
}

bool ShardHealthView::is_unreachable(const std::string& shard_name) {
  if (!is_down(shard_name)) {
    return false;
  }
  const CheckedShard* shard = report_.find(shard_name);
  return shard == nullptr || !shard->refuses_writes;
}

const ShardHealthReport& ShardHealthView::report() {
  refresh();
  return report_;
}

}  // namespace dq

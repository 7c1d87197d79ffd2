// `dqctl status`: the running master and its children, from the status file
// dqd keeps next to its pid file (common/core/master_status.h). The master's pid
// is checked with kill(pid, 0), so a stale file is reported as not running.
//   status            a table: master pid, uptime, generation; per child
//                     role, title, pid, uptime and restarts
//                     then per Redis shard, as the redis checker sees it:
//                     state, since when, persistence, memory, reason/problems
//   --json status     the status file plus "alive" and "shards" (the
//                     checker's report, common/redis/shard_health.h)
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/core/clock.h"
#include "common/core/master_status.h"
#include "common/core/time_text.h"
#include "common/redis/shard_health.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace status_command {

constexpr const char* kCommand = "status";

bool process_alive(long long pid) {
  if (pid <= 0) {
    return false;
  }
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string format_bytes(int64_t bytes) {
  char text[32];
  if (bytes < int64_t{1024} * 1024) {
    std::snprintf(text, sizeof(text), "%lldK", static_cast<long long>(bytes / 1024));
  } else {
    std::snprintf(text, sizeof(text), "%.1fM", static_cast<double>(bytes) / (1024.0 * 1024.0));
  }
  return text;
}

// "aof(everysec)+rdb(3600 1)": the persistence mode with its fsync and save rules.
std::string persistence_text(const CheckedShard& shard) {
  if (shard.persistence.empty()) {
    return "-";
  }
  std::string text = shard.persistence;
  if (!shard.appendfsync.empty()) {
    text.replace(0, 3, "aof(" + shard.appendfsync + ")");
  }
  size_t rdb = text.find("rdb");
  if (rdb != std::string::npos && !shard.rdb_save.empty()) {
    text.replace(rdb, 3, "rdb(" + shard.rdb_save + ")");
  }
  return text;
}

// The shard table under the children: one line per shard, then its problems.
void print_shards(const Result<ShardHealthReport>& report, int64_t now) {
  if (!report.is_ok()) {
    std::printf("\nshards: no report from dq-redis-checker yet\n");
    return;
  }
  std::printf("\n%-22s %-5s %10s %-24s %-16s  %s\n", "SHARD", "STATE", "FOR", "PERSISTENCE",
              "MEMORY", "REASON");
  for (const auto& shard : report->shards) {
    std::string memory = shard.persistence.empty()
                             ? "-"
                             : format_bytes(shard.used_memory) +
                                   (shard.maxmemory > 0 ? "/" + format_bytes(shard.maxmemory) : "");
    std::printf("%-22s %-5s %10s %-24s %-16s  %s\n", shard.name.c_str(), shard.up ? "up" : "DOWN",
                format_duration(now - shard.since_ms).c_str(), persistence_text(shard).c_str(),
                memory.c_str(), shard.reason.c_str());
    for (const auto& problem : shard.problems) {
      std::printf("  ! %s\n", problem.c_str());
    }
  }
  if (report->stale(now)) {
    std::printf("(the checker's last report is %s old: it may not be running)\n",
                format_duration(now - report->updated_at_ms).c_str());
  }
}

int run_status(const CtlOptions& options, const std::vector<std::string>& args) {
  Config config;
  int exit_code = kExitOk;
  if (!load_config_without_args(kCommand, options, args, &config, &exit_code)) {
    return exit_code;
  }
  auto status = read_master_status(config.pid_file);
  if (!status.is_ok()) {
    std::fprintf(stderr, "dqctl: dqd is not running (%s)\n", status.status().message().c_str());
    return kExitUnavailable;
  }
  long long master_pid = status->value("master_pid", 0LL);
  bool alive = process_alive(master_pid);
  if (options.json) {
    Json out = *status;
    out["alive"] = alive;
    auto shards = read_shard_health(config.pid_file);
    if (shards.is_ok()) {
      out["shards"] = shards->to_json();
    }
    std::printf("%s\n", out.dump(2).c_str());
    return alive ? kExitOk : kExitUnavailable;
  }
  if (!alive) {
    std::fprintf(stderr, "dqctl: dqd is not running (pid %lld in %s is gone)\n", master_pid,
                 master_status_path(config.pid_file).c_str());
    return kExitUnavailable;
  }
  int64_t now = now_ms();
  std::printf("master pid %lld, up %s, generation %d%s\nconfig %s\n\n", master_pid,
              format_duration(now - status->value("started_at_ms", now)).c_str(),
              status->value("generation", 0), status->value("stopping", false) ? ", STOPPING" : "",
              status->value("config", std::string()).c_str());
  std::printf("%-10s %-22s %8s %10s %9s %5s  %s\n", "ROLE", "TITLE", "PID", "UPTIME", "RESTARTS",
              "GEN", "STATE");
  for (const auto& child : status->value("children", Json::array())) {
    long long pid = child.value("pid", -1LL);
    int64_t started = child.value("started_at_ms", int64_t{-1});
    std::printf("%-10s %-22s %8s %10s %9d %5d  %s\n", child.value("role", std::string()).c_str(),
                child.value("title", std::string()).c_str(),
                pid > 0 ? std::to_string(pid).c_str() : "-",
                pid > 0 && started > 0 ? format_duration(now - started).c_str() : "-",
                child.value("restarts", 0), child.value("generation", 0),
                child.value("state", std::string()).c_str());
  }
  print_shards(read_shard_health(config.pid_file), now);
  return kExitOk;
}

constexpr const char* kUsage = "status   master pid, children with role, pid, uptime and restarts";
const CommandRegistration kRegistered(kCommand, kUsage, &run_status);

}  // namespace status_command
}  // namespace dq::ctl

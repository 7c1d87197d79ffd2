// `dqctl status`: the running master and its children, from the status file
// dqd keeps next to its pid file (common/master_status.h). The master's pid
// is checked with kill(pid, 0), so a stale file is reported as not running.
//   status            a table: master pid, uptime, generation; per child
//                     role, title, pid, uptime and restarts
//   --json status     the status file plus "alive"
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/clock.h"
#include "common/master_status.h"

namespace dq::ctl {
namespace {

constexpr const char* kCommand = "status";
constexpr const char* kUsage = "status   master pid, children with role, pid, uptime and restarts";

bool process_alive(long long pid) {
  if (pid <= 0) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string format_uptime(int64_t ms) {
  if (ms < 0) return "-";
  int64_t seconds = ms / 1000;
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(seconds));
  } else if (seconds < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(seconds / 60),
                  static_cast<long long>(seconds % 60));
  } else if (seconds < 86400) {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(seconds / 3600),
                  static_cast<long long>(seconds / 60 % 60));
  } else {
    std::snprintf(text, sizeof(text), "%lldd%02lldh", static_cast<long long>(seconds / 86400),
                  static_cast<long long>(seconds / 3600 % 24));
  }
  return text;
}

int run_status(const CtlOptions& options, const std::vector<std::string>& args) {
  if (!args.empty()) return usage_error(kCommand, "takes no arguments");
  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) return exit_code;
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
              format_uptime(now - status->value("started_at_ms", now)).c_str(),
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
                pid > 0 && started > 0 ? format_uptime(now - started).c_str() : "-",
                child.value("restarts", 0), child.value("generation", 0),
                child.value("state", std::string()).c_str());
  }
  return kExitOk;
}

const CommandRegistration kRegistered(kCommand, kUsage, &run_status);

}  // namespace
}  // namespace dq::ctl

// A previous master: one that did not stop cleanly is logged, one still
// running refuses the start (see previous_master.h).
#include "master/previous_master.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/core/log.h"
#include "common/core/master_status.h"

namespace dq {
namespace {

// "dq-server_0" from /proc/PID/cmdline, "" when the process is gone.
std::string process_title_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string title;
  std::getline(in, title, '\0');
  return title;
}

// The first line of a small /proc file, "" when unreadable.
std::string proc_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// When the process started, in ms of the wall clock (/proc/PID/stat's start
// time after boot, plus the boot time); -1 when it is gone.
int64_t process_started_ms(pid_t pid) {
  std::string stat = proc_line("/proc/" + std::to_string(pid) + "/stat");
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) {
    return -1;
  }
  std::istringstream fields(stat.substr(close_paren + 2));
  std::string field;
  long long ticks = -1;
  // state is field 3; starttime is field 22.
  for (int number = 3; number <= 22 && fields >> field; ++number) {
    if (number == 22) {
      ticks = std::atoll(field.c_str());
    }
  }
  std::ifstream machine("/proc/stat");
  std::string name;
  long long boot_s = -1;
  while (machine >> name) {
    if (name == "btime") {
      machine >> boot_s;
      break;
    }
  }
  if (ticks < 0 || boot_s < 0) {
    return -1;
  }
  return boot_s * 1000 + ticks * 1000 / sysconf(_SC_CLK_TCK);
}

}  // namespace

Status check_previous_master_stopped(const std::string& pid_file) {
  auto previous = read_master_status(pid_file);
  if (!previous.is_ok()) {
    return Status::ok();
  }
  long long pid = previous->value("master_pid", 0LL);
  int64_t started_ms = previous->value("started_at_ms", int64_t{0});
  if (pid <= 0 || pid == getpid() || kill(static_cast<pid_t>(pid), 0) != 0) {
    return Status::ok();
  }
  // The same program, started when the status file says: not a process that
  // got the dead master's pid. (--daemon forks once before the status
  // clock starts: a few seconds of slack.)
  int64_t alive_since = process_started_ms(static_cast<pid_t>(pid));
  bool same_program =
      proc_line("/proc/" + std::to_string(pid) + "/comm") == proc_line("/proc/self/comm");
  if (!same_program || alive_since < 0 || std::llabs(alive_since - started_ms) > 10000) {
    return Status::ok();
  }
  std::string config = previous->value("config", std::string("?"));
  return Status(Code::kConflict,
                "another master is running (pid " + std::to_string(pid) + ", config " + config +
                    ", status file " + master_status_path(pid_file) + ") although its pid file " +
                    pid_file +
                    " was removed; it still serves the ports and the shards. Stop it first "
                    "(kill -TERM " +
                    std::to_string(pid) + "), then start dqd again");
}

void log_previous_master(const std::string& pid_file) {
  auto previous = read_master_status(pid_file);
  if (!previous.is_ok()) {
    return;
  }
  long long pid = previous->value("master_pid", 0LL);
  if (pid <= 0 || pid == getpid()) {
    return;
  }
  std::string draining;
  for (const auto& child : previous->value("children", Json::array())) {
    long long child_pid = child.value("pid", -1LL);
    std::string title = child.value("title", std::string());
    if (child_pid <= 0 || title.rfind("dq-", 0) != 0) {
      continue;
    }
    if (process_title_of(static_cast<pid_t>(child_pid)) != title) {
      continue;
    }
    draining += (draining.empty() ? "" : ", ") + title + " (pid " + std::to_string(child_pid) + ")";
  }
  err_log().warn(
      "the previous master (pid {}) did not stop cleanly{}", pid,
      draining.empty() ? std::string() : "; its children finish their work and exit: " + draining);
}

}  // namespace dq

// Logs a previous master that did not stop cleanly (see previous_master.h).
#include "master/previous_master.h"

#include <unistd.h>

#include <fstream>

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

}  // namespace

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

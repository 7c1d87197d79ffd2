// Implements client/dqctl/registry_beside_dqd.h.
#include "client/dqctl/registry_beside_dqd.h"

#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "common/core/master_status.h"

namespace dq::ctl {
namespace {

bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// "/proc/PID/fd/N" of a running dq process that holds `path` after it was
// deleted or replaced; "" when none can be seen (none, or another user's).
std::string held_lost_file(const Json& status, const std::string& path) {
  std::vector<int64_t> pids = {status.value("master_pid", int64_t{0})};
  if (status.contains("children") && status["children"].is_array()) {
    for (const auto& child : status["children"]) {
      pids.push_back(child.value("pid", int64_t{0}));
    }
  }
  for (int64_t pid : pids) {
    std::error_code error;
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      std::filesystem::path target = std::filesystem::read_symlink(entry.path(), error);
      if (!error && target.string() == path + " (deleted)") {
        return entry.path().string();
      }
    }
  }
  return "";
}

}  // namespace

Status check_registry_beside_dqd(const Config& config) {
  if (config.pid_file.empty()) {
    return Status::ok();
  }
  auto status = read_master_status(config.pid_file);
  if (!status.is_ok()) {
    return Status::ok();  // no dqd ran with this config
  }
  auto pid = static_cast<pid_t>(status->value("master_pid", int64_t{0}));
  if (!alive(pid) || status->value("stopping", false)) {
    return Status::ok();
  }
  std::error_code error;
  std::string path = std::filesystem::absolute(config.sqlite_path, error).lexically_normal();
  bool exists = std::filesystem::exists(path, error);
  std::string held = held_lost_file(*status, path);
  if (exists && held.empty()) {
    return Status::ok();
  }
  // The deleted file is still readable through dqd's descriptor; its newest
  // pages may be in its journal, <path>-wal, which stays at the path.
  std::string keep = held.empty() ? ""
                                  : " The file dqd reads is " + held + ", its journal " + path +
                                        "-wal: to keep what it holds, copy both (cp " + held + " " +
                                        path + ".kept; cp " + path + "-wal " + path +
                                        ".kept-wal) before dqd stops, and move them to " + path +
                                        " and " + path + "-wal once it has.";
  std::string what = exists ? " was replaced while dqd (pid " + std::to_string(pid) +
                                  ") runs: dqd still reads the old one, so dqctl would write "
                                  "where dqd does not read."
                            : " does not exist, but dqd (pid " + std::to_string(pid) +
                                  ") is running with it: it was deleted while dqd runs. "
                                  "dqctl does not create a new, empty registry beside it (dqd "
                                  "would never read what is written there).";
  return Status(Code::kUnavailable,
                "the registry file " + path + what +
                    " Stop dqd, put the registry you want at that path and start dqd again." +
                    keep);
}

}  // namespace dq::ctl

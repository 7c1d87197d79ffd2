// Implements the atomic status file write.
#include "master/status_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace dq {

std::string status_file_path(const std::string& pid_file) { return pid_file + ".status.json"; }

Status write_status_file(const std::string& pid_file, const Json& status) {
  std::string path = status_file_path(pid_file);
  std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << status.dump(2) << "\n";
    if (!out) return Status(Code::kUnavailable, "cannot write " + temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    unlink(temp.c_str());
    return Status(Code::kUnavailable, "cannot rename " + temp + " to " + path + ": " + reason);
  }
  return Status::ok();
}

}  // namespace dq

// Implements the master's status file (atomic write, read).
#include "common/master_status.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dq {

std::string master_status_path(const std::string& pid_file) { return pid_file + ".status.json"; }

Status write_master_status(const std::string& pid_file, const Json& status) {
  std::string path = master_status_path(pid_file);
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

Result<Json> read_master_status(const std::string& pid_file) {
  std::string path = master_status_path(pid_file);
  std::ifstream in(path);
  if (!in) return Status(Code::kNotFound, "no status file " + path);
  std::stringstream text;
  text << in.rdbuf();
  Json parsed = Json::parse(text.str(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status(Code::kInternal, "status file " + path + " is not a JSON object");
  }
  return parsed;
}

}  // namespace dq

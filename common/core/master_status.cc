// Implements the master's status file (atomic write, read).
#include "common/core/master_status.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/core/json_file.h"

namespace dq {

std::string master_status_path(const std::string& pid_file) { return pid_file + ".status.json"; }

Status write_master_status(const std::string& pid_file, const Json& status) {
  return write_json_file(master_status_path(pid_file), status);
}

Result<Json> read_master_status(const std::string& pid_file) {
  return read_json_object_file(master_status_path(pid_file), "status file");
}

}  // namespace dq

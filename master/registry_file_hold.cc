// Implements master/registry_file_hold.h.
#include "master/registry_file_hold.h"

#include <fcntl.h>
#include <unistd.h>

namespace dq {

RegistryFileHold::~RegistryFileHold() { release(); }

void RegistryFileHold::hold(const std::string& path) {
  if (fd_ >= 0 && path == path_) {
    return;
  }
  release();
  // Forked children inherit it (one more descriptor on the same file);
  // O_CLOEXEC keeps it out of the programs dqd execs (a local redis-server).
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  path_ = fd_ >= 0 ? path : "";
}

void RegistryFileHold::release() {
  if (fd_ >= 0) {
    close(fd_);
  }
  fd_ = -1;
  path_.clear();
}

}  // namespace dq

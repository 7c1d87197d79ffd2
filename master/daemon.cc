// Implements daemonize.
#include "master/daemon.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dq {

Status daemonize() {
  pid_t pid = fork();
  if (pid < 0) {
    return Status(Code::kInternal, std::string("fork: ") + std::strerror(errno));
  }
  if (pid > 0) {
    _exit(0);
  }
  if (setsid() < 0) {
    return Status(Code::kInternal, std::string("setsid: ") + std::strerror(errno));
  }
  pid = fork();  // no longer a session leader: can never acquire a terminal again
  if (pid < 0) {
    return Status(Code::kInternal, std::string("fork: ") + std::strerror(errno));
  }
  if (pid > 0) {
    _exit(0);
  }
  if (chdir("/") != 0) {
    return Status(Code::kInternal, std::string("chdir /: ") + std::strerror(errno));
  }
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd < 0) {
    return Status(Code::kInternal, std::string("/dev/null: ") + std::strerror(errno));
  }
  dup2(null_fd, 0);
  dup2(null_fd, 1);
  dup2(null_fd, 2);
  if (null_fd > 2) {
    close(null_fd);
  }
  return Status::ok();
}

}  // namespace dq

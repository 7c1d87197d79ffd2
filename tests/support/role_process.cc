// Forks a child that runs one role function (see role_process.h).
#include "tests/support/role_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/core/log.h"

namespace dq::test {

RoleProcess::RoleProcess(const RoleFn& role, const Config& config, int index,
                         const std::string& title) {
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    init_logging(config.log_dir, config.log_level, title);
    _exit(role(config, index));
  }
}

RoleProcess::~RoleProcess() { stop(); }

int RoleProcess::stop(int timeout_ms) {
  if (pid_ <= 0) {
    return -1;
  }
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill9();
  return -1;
}

void RoleProcess::kill9() {
  if (pid_ <= 0) {
    return;
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace dq::test

// Implements tests/support/child_process.h.
#include "tests/support/child_process.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dq::test {

pid_t spawn_logged(const std::vector<std::string>& programs, std::vector<std::string> argv,
                   const std::string& log_path) {
  std::vector<char*> raw;
  raw.reserve(argv.size() + 1);
  for (auto& arg : argv) {
    raw.push_back(arg.data());
  }
  raw.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(126);  // the test died before prctl took effect
    }
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    for (const auto& program : programs) {
      execvp(program.c_str(), raw.data());
    }
    _exit(127);
  }
  return pid;
}

bool child_exited(pid_t* pid) {
  if (*pid <= 0) {
    return true;
  }
  int status = 0;
  pid_t done = waitpid(*pid, &status, WNOHANG);
  if (done == *pid || done < 0) {
    *pid = -1;
    return true;
  }
  return false;
}

void kill_child(pid_t* pid) {
  if (*pid <= 0) {
    return;
  }
  kill(*pid, SIGKILL);
  int status = 0;
  waitpid(*pid, &status, 0);
  *pid = -1;
}

}  // namespace dq::test

// RoleProcess: runs one dqd role (timer or consumer) in a forked child of the
// test, the way the master does: own process, default signal handlers,
// logging to the test's log dir, killed with the test (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "common/core/config.h"

namespace dq::test {

using RoleFn = std::function<int(const Config&, int)>;

class RoleProcess {
 public:
  RoleProcess(const RoleFn& role, const Config& config, int index, const std::string& title);
  ~RoleProcess();  // stop()
  RoleProcess(const RoleProcess&) = delete;
  RoleProcess& operator=(const RoleProcess&) = delete;

  // SIGTERM, wait up to timeout_ms; returns the exit status (-1 if killed).
  int stop(int timeout_ms = 10000);
  void kill9();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

}  // namespace dq::test

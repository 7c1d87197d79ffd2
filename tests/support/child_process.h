// Child processes of the test harness (redis-server, sentinels, the SMTP
// sink, dqd): started with fork+exec (no shell), their output appended to a
// log file, and never outliving the test (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dq::test {

// Starts argv in a child process, execvp of each of `programs` in turn (a
// name looked up in PATH, or a path), argv[0] as given; stdout and stderr
// appended to log_path. Returns its pid; the child exits 127 when no program
// could be run.
pid_t spawn_logged(const std::vector<std::string>& programs, std::vector<std::string> argv,
                   const std::string& log_path);

// True once the child has exited (and is reaped), or is no child of ours;
// then *pid is -1.
bool child_exited(pid_t* pid);

// SIGKILL and reap; *pid is -1 afterwards (nothing when it already is).
void kill_child(pid_t* pid);

}  // namespace dq::test

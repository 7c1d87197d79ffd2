// The stop flag of a child process: SIGTERM/SIGINT set it, loops check it.
// Roles install the handlers at start (the master resets them to default
// before calling run_*).
#pragma once

#include <string>

namespace dq {

// Installs SIGTERM and SIGINT handlers that set the flag (SA_RESTART), and a
// SIGHUP handler that asks for the log files to be reopened.
void install_stop_handlers();
// Call from the role's main loop: reopens the log files (init_logging with
// these arguments) when a SIGHUP came since the last call.
void reopen_logs_if_asked(const std::string& dir, const std::string& level,
                          const std::string& title);
bool stop_requested();
void request_stop();  // as if a signal came (tests, fatal errors)

// The master calls this in each child right after fork. The children get
// SIGTERM both from the master (stop, reload) and from the kernel when the
// master dies (PR_SET_PDEATHSIG); master_died() tells the two apart.
void remember_master(int master_pid);
// True when remember_master() was called and the parent is no longer that
// process (the master was killed and this child was reparented).
bool master_died();

}  // namespace dq

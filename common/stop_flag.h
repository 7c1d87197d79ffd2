// The stop flag of a child process: SIGTERM/SIGINT set it, loops check it.
// Roles install the handlers at start (the master resets them to default
// before calling run_*).
#pragma once

namespace dq {

// Installs SIGTERM and SIGINT handlers that set the flag (SA_RESTART).
void install_stop_handlers();
bool stop_requested();
void request_stop();  // as if a signal came (tests, fatal errors)

}  // namespace dq

// --daemon: detach from the terminal (fork, setsid, fork again), with stdin,
// stdout and stderr on /dev/null. Errors after this point go to err_*.log.
#pragma once

#include "common/core/status.h"

namespace dq {

// Returns in the daemon only; the original process exits 0.
Status daemonize();

}  // namespace dq

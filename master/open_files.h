// The master raises its open files limit (RLIMIT_NOFILE) from the soft to the
// hard limit before it forks, so every child inherits the higher one: an API
// server holds one descriptor per client connection, and the usual soft
// limit of 1,024 is far below what a busy server keeps open. Each API server
// then sizes its connection budget from it (server/connection_budget.h).
#pragma once

namespace dq {

// Raises the soft limit to the hard one (capped at /proc/sys/fs/nr_open when
// the hard limit is unlimited) and logs the outcome.
void raise_open_files_limit();

}  // namespace dq

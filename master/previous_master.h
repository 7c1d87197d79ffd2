// At start: a previous master that was killed left its status file and
// children that still finish their work; say so in the log. One that still
// runs (someone removed its pid file, so the lock no longer stops a second
// master) refuses the start with what happened.
#pragma once

#include <string>

#include "common/core/status.h"

namespace dq {

// A previous master that was killed leaves its status file behind, and its
// children finish what they hold before they exit. Says so in the log; they
// are not ours to wait for (and they already released the listening sockets).
void log_previous_master(const std::string& pid_file);

// kConflict when the master named by the status file beside pid_file is
// still running: its pid file was removed, so a second master got the
// lock; it must not start beside the first (the ports, the shards and the
// local Redis are the first's). The message says so and how to go on.
Status check_previous_master_stopped(const std::string& pid_file);

}  // namespace dq

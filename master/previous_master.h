// At start: a previous master that was killed left its status file and
// children that still finish their work; say so in the log.
#pragma once

#include <string>

namespace dq {

// A previous master that was killed leaves its status file behind, and its
// children finish what they hold before they exit. Says so in the log; they
// are not ours to wait for (and they already released the listening sockets).
void log_previous_master(const std::string& pid_file);

}  // namespace dq

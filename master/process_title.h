// Process titles: what `ps` and /proc/PID/cmdline show for a child
// (dq-server_0, dq-timer_0, ...). Like nginx, the title is written over the
// memory that held argv (and environ, which is moved to the heap first), and
// the kernel's short name is set with prctl(PR_SET_NAME) for top and comm.
#pragma once

#include <string>

namespace dq {

// Call once at the start of main, before anything reads environ. Copies the
// argv strings and the environment to the heap, so argv and getenv keep
// working after a title overwrote the original memory.
void init_process_title(int argc, char** argv);

void set_process_title(const std::string& title);

}  // namespace dq

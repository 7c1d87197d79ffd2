// Implements ChildTable and the respawn backoff.
#include "master/child_table.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstring>

#include "common/registry/drain_time.h"

namespace dq {

int64_t drain_ms_for(const Config& config, const Child& child) {
  if (child.role != nullptr && std::strcmp(child.role->name, "consumer") == 0) {
    return consumer_drain_ms_from_registry(config);
  }
  return config.drain_timeout_ms;
}

int64_t respawn_delay_ms(int quick_deaths) {
  if (quick_deaths <= 1) {
    return 0;
  }
  int shift = std::min(quick_deaths - 2, 10);
  return std::min<int64_t>(int64_t{500} << shift, 30000);
}

std::string describe_exit(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    int number = WTERMSIG(wait_status);
    return "was killed by signal " + std::to_string(number) + " (" + strsignal(number) + ")";
  }
  return "stopped (wait status " + std::to_string(wait_status) + ")";
}

Child* ChildTable::find(pid_t pid) {
  for (auto& child : children_) {
    if (child.pid == pid) {
      return &child;
    }
  }
  return nullptr;
}

void ChildTable::remove(pid_t pid) {
  children_.erase(std::remove_if(children_.begin(), children_.end(),
                                 [pid](const Child& child) { return child.pid == pid; }),
                  children_.end());
}

size_t ChildTable::running() const {
  return static_cast<size_t>(std::count_if(children_.begin(), children_.end(),
                                           [](const Child& child) { return child.pid > 0; }));
}

}  // namespace dq

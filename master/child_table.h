// ChildTable: the master's record of its children, one slot per role and
// index and generation, with what `dqctl status` shows (pid, start time,
// restarts) and what the respawn backoff needs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "master/roles.h"

namespace dq {

struct Child {
  const RoleSpec* role = nullptr;
  int index = 0;
  int generation = 0;
  std::string title;
  pid_t pid = -1;               // -1 while waiting to be (re)spawned
  int64_t started_at_ms = 0;    // wall clock, for status
  int64_t started_mono_ms = 0;  // for "died too soon" and uptime
  int restarts = 0;
  int quick_deaths = 0;        // consecutive exits less than kQuickDeathMs after start
  int64_t respawn_at_ms = -1;  // monotonic; -1: not waiting
  bool retiring = false;       // old generation: told (or about) to stop, never respawned
  int64_t term_at_ms = -1;     // monotonic: when to send SIGTERM (retiring)
  int64_t kill_at_ms = -1;     // monotonic: when to SIGKILL (retiring or stopping)
};

// A child that dies sooner than this after starting counts as crashing.
constexpr int64_t kQuickDeathMs = 10000;

// Delay before respawning after `quick_deaths` consecutive quick deaths:
// 0 for the first, then 500 ms, 1 s, 2 s ... capped at 30 s.
int64_t respawn_delay_ms(int quick_deaths);

// How long the master waits for `child` to stop before SIGKILL: a consumer
// finishes the callbacks it holds (common/registry/drain_time.h), the others get
// [master] drain_timeout_ms.
int64_t drain_ms_for(const Config& config, const Child& child);

// "exited with status 3" / "was killed by signal 9 (Killed)".
std::string describe_exit(int wait_status);

class ChildTable {
 public:
  std::vector<Child>& children() { return children_; }
  const std::vector<Child>& children() const { return children_; }

  Child* find(pid_t pid);
  void remove(pid_t pid);
  // Children with a live process (pid > 0).
  size_t running() const;

 private:
  std::vector<Child> children_;
};

}  // namespace dq

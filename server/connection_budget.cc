// ConnectionBudget (see connection_budget.h).
#include "server/connection_budget.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "server/acceptor.h"

namespace dq {
namespace {

// At least this many descriptors stay free for what the process opens later.
constexpr size_t kMinSpare = 32;
// An eviction line at most this often, with the count since the last one.
constexpr int64_t kEvictionLogMs = 10000;

// Descriptors open in this process now (/proc/self/fd, without the one
// reading it); 64 when that cannot be read.
size_t open_descriptors() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) {
    return 64;
  }
  size_t count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') {
      ++count;
    }
  }
  closedir(dir);
  return count > 0 ? count - 1 : 0;
}

}  // namespace

ConnectionBudget& ConnectionBudget::of_process() {
  static ConnectionBudget budget;
  return budget;
}

ConnectionBudget::ConnectionBudget() {
  rlimit limit{};
  size_t soft = 1024;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    soft = limit.rlim_cur == RLIM_INFINITY ? size_t{1} << 20 : static_cast<size_t>(limit.rlim_cur);
  }
  size_t in_use = open_descriptors();
  size_t spare = std::max(kMinSpare, soft / 64);
  limit_ = soft > in_use + spare + 16 ? soft - in_use - spare : 16;
  err_log().info(
      "connections: at most {} open at once (open files limit {}, {} descriptors in use, {} kept "
      "spare); past that the connection idle the longest is closed",
      limit_, soft, in_use, spare);
}

void ConnectionBudget::add_pool(ConnectionPool* pool) { pools_.push_back(pool); }

void ConnectionBudget::remove_pool(ConnectionPool* pool) {
  pools_.erase(std::remove(pools_.begin(), pools_.end(), pool), pools_.end());
}

void ConnectionBudget::add_acceptor(Acceptor* acceptor) { acceptors_.push_back(acceptor); }

void ConnectionBudget::remove_acceptor(Acceptor* acceptor) {
  acceptors_.erase(std::remove(acceptors_.begin(), acceptors_.end(), acceptor), acceptors_.end());
}

ConnectionPool* ConnectionBudget::pool_with_oldest_idle() {
  ConnectionPool* oldest_pool = nullptr;
  uint64_t oldest = 0;
  for (ConnectionPool* pool : pools_) {
    uint64_t stamp = pool->oldest_idle();
    if (stamp != 0 && (oldest == 0 || stamp < oldest)) {
      oldest = stamp;
      oldest_pool = pool;
    }
  }
  return oldest_pool;
}

bool ConnectionBudget::make_room() {
  while (open_ >= limit_) {
    if (!free_one()) {
      return false;
    }
  }
  return true;
}

bool ConnectionBudget::free_one() {
  ConnectionPool* pool = pool_with_oldest_idle();
  if (pool == nullptr) {
    return false;
  }
  size_t before = open_;
  pool->close_oldest_idle();
  note_eviction();
  return open_ < before;  // else the pool did not close it: stop rather than loop
}

void ConnectionBudget::note_eviction() {
  ++evicted_;
  int64_t now = monotonic_ms();
  if (evicted_logged_ms_ != 0 && now - evicted_logged_ms_ < kEvictionLogMs) {
    return;
  }
  err_log().warn(
      "connections: {} open, the budget is {}: closed {} idle connection(s), oldest first, since "
      "the last such line",
      open_, limit_, evicted_ - evicted_logged_);
  evicted_logged_ = evicted_;
  evicted_logged_ms_ = now;
}

void ConnectionBudget::closed(size_t count) {
  open_ -= std::min(open_, count);
  if (open_ < limit_) {
    for (Acceptor* acceptor : acceptors_) {
      acceptor->resume();
    }
  }
}

}  // namespace dq

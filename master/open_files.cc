// Raises the open files limit before the children are forked (see open_files.h).
#include "master/open_files.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/core/log.h"

namespace dq {
namespace {

// The kernel's ceiling for RLIMIT_NOFILE; 1048576 (its default) when unknown.
rlim_t kernel_ceiling() {
  std::ifstream in("/proc/sys/fs/nr_open");
  unsigned long long value = 0;
  if (in >> value && value > 0) {
    return static_cast<rlim_t>(value);
  }
  return 1048576;
}

}  // namespace

void raise_open_files_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    err_log().warn("cannot read the open files limit: {}", std::strerror(errno));
    return;
  }
  rlim_t target = limit.rlim_max == RLIM_INFINITY ? kernel_ceiling() : limit.rlim_max;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= target) {
    err_log().info("open files limit: {} (already the hard limit)",
                   static_cast<unsigned long long>(limit.rlim_cur));
    return;
  }
  rlim_t before = limit.rlim_cur;
  limit.rlim_cur = target;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    err_log().warn("open files limit stays {}: cannot raise it to {}: {}",
                   static_cast<unsigned long long>(before), static_cast<unsigned long long>(target),
                   std::strerror(errno));
    return;
  }
  err_log().info("open files limit raised from {} to {} (the hard limit) for every child",
                 static_cast<unsigned long long>(before), static_cast<unsigned long long>(target));
}

}  // namespace dq

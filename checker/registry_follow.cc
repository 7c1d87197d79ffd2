// Implements checker/registry_follow.h.
#include "checker/registry_follow.h"

#include <chrono>
#include <thread>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/repeat_log.h"
#include "common/core/stop_flag.h"
#include "common/registry/registry_sync.h"

namespace dq {
namespace {

constexpr int64_t kTurnMs = 250;

}  // namespace

void follow_shared_registry(const Config& config) {
  RegistrySync sync(config);
  RepeatLog failing(spdlog::level::warn);  // once, then with a count, while it fails
  while (!stop_requested()) {
    Status status = sync.turn();
    if (!status.is_ok()) {
      failing.note("registry sync: " + status.message() +
                   "; the roles go on with this host's copy");
    } else if (failing.clear()) {
      err_log().info("registry sync: the shared registry answers again");
    }
    int64_t next = monotonic_ms() + kTurnMs;
    while (!stop_requested() && monotonic_ms() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
}

}  // namespace dq

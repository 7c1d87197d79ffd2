// dq-redis-checker: starts the shard watch thread, the dead-letter callback
// thread, the mover thread (a store upgrade left undone, a shard moving in
// or draining) and, when the registry is shared, the registry sync thread,
// and runs the alert loop on the main thread
// until stopped (see checker.h).
#include "checker/checker.h"

#include <curl/curl.h>

#include <chrono>
#include <thread>
#include <vector>

#include "checker/alert_loop.h"
#include "checker/dead_callback_loop.h"
#include "checker/dependency_loop.h"
#include "checker/registry_follow.h"
#include "checker/shard_mover.h"
#include "checker/shard_watch.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"

namespace dq {
namespace {

constexpr int kAlertTurnMs = 250;
constexpr const char* kTitle = "dq-redis-checker";

}  // namespace

int run_checker(const Config& config, int /*index*/) {
  install_stop_handlers();
  err_log().info("{} starting: {} shard(s) every {} ms, down after {}, up after {}", kTitle,
                 config.shards.size(), config.checker_interval_ms, config.checker_down_after,
                 config.checker_up_after);
  curl_global_init(CURL_GLOBAL_DEFAULT);  // before the threads that use libcurl
  ShardWatch watch(config);
  std::thread watching([&watch] { watch.run(); });
  ShardMover mover(config);
  std::thread moving([&mover] { mover.run(); });
  std::thread syncing;
  if (config.shared_registry) {
    syncing = std::thread([&config] { follow_shared_registry(config); });
  }
  // Its own thread: a slow receiver must not hold up the alerts.
  std::thread dead_callbacks([&config] { DeadCallbackLoop(config).run(); });
  // One releaser of waiting jobs per shard: each blocks on its shard's wake list.
  std::vector<std::thread> releasers;
  for (size_t shard = 0; shard < config.shards.size(); ++shard) {
    releasers.emplace_back([&config, shard] { DependencyLoop(config, shard).run(); });
  }
  AlertLoop alerts(config);
  while (!stop_requested()) {
    reopen_logs_if_asked(config.log_dir, config.log_level, kTitle);
    alerts.turn();
    int64_t next = monotonic_ms() + kAlertTurnMs;
    while (!stop_requested() && monotonic_ms() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  watching.join();
  dead_callbacks.join();
  for (auto& releaser : releasers) {
    releaser.join();
  }
  moving.join();
  if (syncing.joinable()) {
    syncing.join();
  }
  err_log().info("{} stopped", kTitle);
  return 0;
}

}  // namespace dq

// dq-timer_N: one thread per shard moves due jobs from the delayed set to the
// ready lists (promote.lua, a batch per call) and requeues jobs whose lease
// expired. Between rounds it sleeps until the next due time, woken early by a
// token that add.lua / fail.lua push when an earlier job arrives. Several
// timers may run against the same Redis: every move is one Lua script, so a
// job is promoted by exactly one of them.
#include "timer/timer.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "timer/shard_timer.h"

namespace dq {

int run_timer(const Config& config, int index) {
  install_stop_handlers();
  err_log().info("dq-timer_{} starting on {} shard(s)", index, config.shards.size());
  std::vector<std::thread> threads;
  threads.reserve(config.shards.size());
  for (size_t shard = 0; shard < config.shards.size(); ++shard) {
    threads.emplace_back([&config, shard] { ShardTimer(config, shard).run(); });
  }
  // The main thread only watches for SIGHUP while the shard threads work.
  std::string title = "dq-timer_" + std::to_string(index);
  while (!stop_requested()) {
    reopen_logs_if_asked(config.log_dir, config.log_level, title);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (master_died()) {
    err_log().warn("dq-timer_{}: the master died; stopping", index);
  }
  for (auto& thread : threads) {
    thread.join();
  }
  err_log().info("dq-timer_{} stopped", index);
  return 0;
}

}  // namespace dq

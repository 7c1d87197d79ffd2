// dq-timer_N: one libevent loop and one thread over every shard. Per shard a
// ShardTimer moves due jobs from the delayed set to the ready lists
// (promote.lua, a batch per call) and requeues jobs whose lease expired;
// between rounds it waits until the next due time, woken early by a token
// that add.lua / fail.lua push when an earlier job arrives. Every call is asynchronous on the one
// loop (common/store/async_job_store.h), so a slow shard delays only its own work. Several timers
// may run against the same Redis: every move is one Lua script, so a job is promoted by exactly one
// of them. A ScheduleRunner adds the topics' schedules' ticks, each once however many timers run.
#include "timer/timer.h"

#include <memory>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/event_handles.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "common/registry/topic_cache.h"
#include "common/store/async_job_store.h"
#include "timer/schedule_runner.h"
#include "timer/shard_timer.h"

namespace dq {
namespace {

constexpr int64_t kStopCheckMs = 100;  // a stop or a SIGHUP is seen within this

// The timer adds no job: no connections that confirm adds on replicas.
Config timer_store_settings(const Config& config) {
  Config settings = config;
  settings.redis_wait_replicas = 0;
  return settings;
}

struct TimerLoop {
  TimerLoop(const Config& config, int index)
      : config(config),
        title("dq-timer_" + std::to_string(index)),
        settings(timer_store_settings(config)),
        base(event_base_new()),
        store(base.get(), settings),
        wakes(base.get(), settings),
        topics(config.sqlite_path) {}

  // Pending commands fail while the shard timers still exist (they stop first).
  ~TimerLoop() {
    for (auto& timer : timers) {
      timer->stop();
    }
    if (schedules) {
      schedules->stop();
    }
    wakes.shutdown();
    store.shutdown();
  }

  static void on_tick(evutil_socket_t /*fd*/, short /*events*/, void* self) {
    auto* loop = static_cast<TimerLoop*>(self);
    reopen_logs_if_asked(loop->config.log_dir, loop->config.log_level, loop->title);
    if (stop_requested()) {
      event_base_loopbreak(loop->base.get());
    }
  }

  void run() {
    store.start();
    wakes.start();
    // The first rounds start once each shard's first connect has ended, so a
    // start is not logged as an outage.
    while (!stop_requested() && !(store.first_connects_ended() && wakes.first_connects_ended())) {
      event_base_loop(base.get(), EVLOOP_ONCE);
    }
    for (size_t shard = 0; shard < config.shards.size(); ++shard) {
      timers.push_back(
          std::make_unique<ShardTimer>(config, shard, base.get(), store, wakes, topics));
    }
    for (size_t shard = 0; shard < timers.size(); ++shard) {
      timers[shard]->start();
    }
    schedules = std::make_unique<ScheduleRunner>(config, base.get(), store, topics);
    schedules->start();
    UniqueEvent tick(event_new(base.get(), -1, EV_PERSIST, &TimerLoop::on_tick, this));
    timeval every{0, static_cast<suseconds_t>(kStopCheckMs * 1000)};
    event_add(tick.get(), &every);
    event_base_dispatch(base.get());
  }

  const Config& config;
  std::string title;
  Config settings;
  UniqueEventBase base;  // before everything on it
  AsyncJobStore store;   // promote, requeue
  AsyncJobStore wakes;   // the wake waits only (a BLPOP holds its connection)
  TopicCache topics;
  std::vector<std::unique_ptr<ShardTimer>> timers;
  std::unique_ptr<ScheduleRunner> schedules;  // the topics' schedules (schedule_runner.h)
};

}  // namespace

int run_timer(const Config& config, int index) {
  install_stop_handlers();
  err_log().info("dq-timer_{} starting on {} shard(s)", index, config.shards.size());
  {
    TimerLoop loop(config, index);
    loop.run();
  }
  if (master_died()) {
    err_log().warn("dq-timer_{}: the master died; stopping", index);
  }
  err_log().info("dq-timer_{} stopped", index);
  return 0;
}

}  // namespace dq

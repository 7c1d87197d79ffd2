// ScheduleRunner: the timer's work for the topics' schedules
// (docs/schedules.md). Every timer on every host runs every schedule that
// is not paused; schedule_tick.lua on the schedule's home shard lets one of
// them add each tick (common/store/schedule_ticks.h). Between ticks a
// schedule costs nothing: the runner remembers each one's next tick (by
// Redis's clock, as last read) and asks its shard again only when it is
// due, or every kScheduleRecheckMs in case another timer moved it on.
// While its home shard changes, a schedule goes on from the later of the
// next ticks its home and its previous home hold (the checker's mover
// carries the key to its home too: checker/shard_mover.h).
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/repeat_log.h"
#include "common/registry/topic_cache.h"
#include "common/store/async_job_store.h"
#include "common/store/schedule_ticks.h"

namespace dq {

class ScheduleRunner {
 public:
  ScheduleRunner(const Config& config, event_base* base, AsyncJobStore& store, TopicCache& topics);
  ScheduleRunner(const ScheduleRunner&) = delete;
  ScheduleRunner& operator=(const ScheduleRunner&) = delete;

  void start();
  void stop() { stopping_ = true; }

 private:
  // What this runner knows of one schedule between its steps.
  struct Known {
    std::optional<int64_t> next_ms;  // by Redis's clock, as last read
    int64_t read_at_ms = 0;          // monotonic, when last read
    int64_t retry_at_ms = 0;         // monotonic: after a failure, not before this
    bool busy = false;               // a step is running
  };
  // One schedule to step, copied from the registry snapshot.
  struct Due {
    std::string topic;
    TopicSchedule schedule;
    std::string topic_tz;
  };

  static void on_timer(evutil_socket_t fd, short events, void* self);
  void round();
  void step(const Due& due);
  // schedule_read.lua on `shard`: the schedule's next tick there, if any.
  void read_next(size_t shard, const std::string& schedule_id,
                 std::function<void(Result<ScheduleRead>)> done);
  void planned(const Due& due, size_t shard, const std::string& next_home,
               const ScheduleRead& read);
  // The home's next tick raised to its previous home's (schedule_carry_in.lua);
  // stepped again at the next round.
  void carry(const std::string& schedule_id, size_t shard, int64_t next_ms);
  void finished(const std::string& schedule_id, Result<const redisReply*> reply, int64_t next_ms);
  void failed(const std::string& schedule_id, const Status& status);

  const Config& config_;
  AsyncJobStore& store_;
  TopicCache& topics_;
  std::vector<ShardRole> roles_;
  UniqueEvent timer_;
  std::map<std::string, Known> known_;  // by schedule id
  int64_t redis_ahead_ms_ = 0;          // Redis's clock minus this host's, as last read
  RepeatLog trouble_;
  bool stopping_ = false;
};

}  // namespace dq

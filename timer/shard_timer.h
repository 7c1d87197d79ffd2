// ShardTimer: the timer's work on one shard, asynchronous on the timer
// process's one loop (timer.cc): promote due jobs while full batches move,
// requeue expired leases, then sleep until the next due time: a BLPOP on the
// timer wake list (on a connection of its own), so an earlier job added
// meanwhile wakes it at once.
#pragma once

#include <event2/event.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/alerts/dead_letter_alerts.h"
#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/repeat_log.h"
#include "common/registry/topic_cache.h"
#include "common/registry/topic_window.h"
#include "common/store/async_job_store.h"

namespace dq {

class ShardTimer {
 public:
  // store: promote and requeue; wakes: the wake waits only (a BLPOP holds
  // its connection); topics: the process's registry snapshot.
  ShardTimer(const Config& config, size_t shard, event_base* base, AsyncJobStore& store,
             AsyncJobStore& wakes, TopicCache& topics);
  ShardTimer(const ShardTimer&) = delete;
  ShardTimer& operator=(const ShardTimer&) = delete;

  // Starts the first round. Never stops on Redis errors: it pauses 500 ms
  // after each, and logs the error once, then with a count.
  void start();
  // No round starts after this.
  void stop() { stopping_ = true; }

 private:
  static void on_timer(evutil_socket_t fd, short events, void* self);
  void round();
  void upgrade_then_promote();
  void promote();
  void find_window_holds();
  void promoted(Result<PromoteResult> result);
  void requeue();
  void requeued(Result<ExpiredResult> result);
  void sleep();
  void after(int64_t ms);  // the next round in ms
  void back_off(const Status& status);
  void note_ok();
  void report_dead(const std::vector<std::pair<std::string, int>>& dead);

  const Config& config_;
  size_t shard_;
  AsyncJobStore& store_;
  AsyncJobStore& wakes_;
  TopicCache& topics_;  // for the alert settings of dead-lettered jobs
  DeadLetterAlerts alerts_;
  RepeatLog outage_;
  UniqueEvent timer_;
  bool stopping_ = false;
  bool upgraded_ = false;       // the shard said its store is current (store_upgrade.h)
  bool upgrading_ = false;      // the last step converted a batch: more to do
  PromoteResult last_;          // this round's last promote
  int64_t promoted_at_ms_ = 0;  // when it answered (monotonic)
  TopicWindows windows_;
  // The topics whose delivery window is closed, for promote (promote.lua).
  std::vector<WindowHold> holds_;
  // The pull topics: promote and requeue publish when their jobs become ready.
  std::vector<std::string> pull_topics_;
  int64_t round_started_ms_ = 0;
  // The topics with a dead_callback or their own dedup window, for requeue_expired.
  std::vector<ExpiryTopic> expiry_topics_;
  int64_t next_lease_check_ms_ = 0;
};

}  // namespace dq

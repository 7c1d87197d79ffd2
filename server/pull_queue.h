// PullQueue: the pull workers' routes of a pull topic (mode "pull";
// docs/delivery.md, "Pull workers"):
//   GET  /v1/topics/{topic}/reserve?ttr=S&wait=S&count=N   lease ready jobs
//   POST /v1/topics/{topic}/jobs/{id}/ack     {"token"}            done
//   POST /v1/topics/{topic}/jobs/{id}/nack    {"token","error"?}   failed attempt
//   POST /v1/topics/{topic}/jobs/{id}/touch   {"token","ttr"?}     longer lease
//   POST /v1/topics/{topic}/ack  {"acks": [{"id","token"}, ...]}    many acks
// A reserve runs reserve.lua on the shards in turn (the push consumers'
// script: expiry, late policy and attempts alike) under a reserve id of its
// own; each job's token names its shard, that reserve id, the job's
// incarnation, its attempt and the lease's ttr, so ack (ack.lua, strict),
// nack (fail.lua) and touch (touch.lua) act only under the lease they name.
// A reserve that finds nothing waits up to `wait` seconds: the scripts that
// make a pull topic's jobs ready publish on {dq}:ready, ReadyFeed wakes the
// topic's waiting reserves, which ask again; a re-check every few seconds
// is the backstop for a lost publish. A reserve whose client went away
// before its answer gives its jobs back (release.lua), attempts uncounted.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "common/alerts/dead_letter_alerts.h"
#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/registry/topic_cache.h"
#include "common/registry/topic_window.h"
#include "common/store/async_job_store.h"
#include "server/http_exchange.h"
#include "server/pull_caps.h"
#include "server/ready_feed.h"

namespace dq {

// What a worker's token names: "<attempt>:<ttr s>:<incarnation>|<reserve
// id>|<shard name>" (reserve ids and incarnations hold no '|', a job
// record's separator). Opaque to workers.
struct PullToken {
  int attempt = 0;
  int ttr_s = 30;
  std::string shard;
  Lease lease;
};

class PullQueue {
 public:
  using Exchange = std::shared_ptr<HttpExchange>;
  // Answers a request: route label (metrics), status, JSON text.
  using Answer = std::function<void(const Exchange& request, const std::string& route, int status,
                                    const std::string& json_text)>;
  enum class Verb { kAck, kNack, kTouch };

  PullQueue(event_base* base, AsyncJobStore& jobs, TopicCache& topics, const Config& config,
            Answer answer);
  ~PullQueue();
  PullQueue(const PullQueue&) = delete;
  PullQueue& operator=(const PullQueue&) = delete;

  void start();  // subscribes to the shards' ready channels
  // Answers every waiting reserve now (no jobs): the server is stopping.
  void stop();

  void reserve(const Exchange& request, const std::string& topic);
  void settle(const Exchange& request, const std::string& topic, const std::string& id, Verb verb);
  // POST /v1/topics/{topic}/ack {"acks": [{"id", "token"}, ...]}: many acks,
  // one ack.lua run per shard; a result per ack, in order.
  void ack_batch(const Exchange& request, const std::string& topic);

 private:
  struct Wait;
  // A capped topic's leases of a reserve's jobs (pull_caps.h).
  std::vector<std::string> cap_leases(const Wait& wait) const;
  void drop_cap_lease(const std::string& topic, const std::string& id, const PullToken& token);
  // Asks the shards in turn, from shard `next` on, until count jobs came.
  void ask(const std::shared_ptr<Wait>& wait);
  void ask_shard(const std::shared_ptr<Wait>& wait, size_t asked);
  void asked(const std::shared_ptr<Wait>& wait);
  void answer_reserve(const std::shared_ptr<Wait>& wait);
  // A publish named the topic ("": every topic).
  void ready(const std::string& topic);
  void tick();
  static void on_tick(evutil_socket_t fd, short what, void* arg);
  int64_t recheck_ms() const;
  std::string next_reserve_id();

  event_base* base_;
  AsyncJobStore& jobs_;
  TopicCache& topics_;
  const Config& config_;
  Answer answer_;
  DeadLetterAlerts alerts_;
  ReadyFeed feed_;
  PullCaps caps_;
  TopicWindows windows_;  // delivery windows: a closed one hands out nothing
  // Reserves that found nothing and wait for a ready job (asking again or not).
  std::list<std::shared_ptr<Wait>> waits_;
  UniqueEvent tick_;
  std::string reserve_prefix_;
  uint64_t reserve_seq_ = 0;
  size_t first_shard_ = 0;  // the shard a reserve asks first, in turn
  // Per shard: the last reserve whose answer went out; the next reserve
  // there drops its lease list (reserve.lua KEYS[7]).
  std::vector<std::string> answered_;
  bool stopped_ = false;
};

}  // namespace dq

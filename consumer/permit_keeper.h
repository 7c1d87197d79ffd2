// PermitKeeper: the consumer's permits to call capped topics (max_in_flight,
// max_rate; docs/delivery.md, "Caps per topic"). The state every consumer on
// every host shares lives on the topic's coordination shard
// (common/store/coordination_shard.h), changed only by permit_lease.lua. The
// calls are asynchronous on the consumer's loop (one out per topic at a
// time), so the delivery loop never waits on Redis: the loop says how many
// unused permits it would like per topic (want), plans its reserves with
// the ones on hand (available), takes one per job a reserve brings (take)
// and gives it back when the call ends (give_back). Permits that arrive
// call `arrived` (the loop plans its reserves again).
//
// This process holds one lease per topic: a count of max_in_flight permits
// (its calls open plus those on hand) renewed while it uses them, and rate
// shares on hand, one used per call. A call that ends puts its permit back on
// the hand without a Redis call. While the topic is far from its caps the
// lease is a block (the slots the topic may hold here) and shares come in
// blocks, so a delivery costs a small fraction of a script call; near them,
// the keeper asks for exactly what its ready jobs need and gives back the
// rest within a few ms.
//
// Permits are taken before jobs are reserved, so a topic at its cap leaves
// its jobs ready: they hold no slot and no lease, and use no attempt. A taker
// that is told to wait retries when the bucket refills (the wait
// permit_lease.lua computes), or within kFullRetryMs while max_in_flight is
// full: never in a spin. A coordination shard that cannot be asked gives no
// permits: the topic's calls pause.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/repeat_log.h"
#include "common/redis/async_shard.h"
#include "common/registry/registry.h"

namespace dq {

// Permits taken for one reserve: how many, and when the oldest rate share
// among them was taken (monotonic ms; given back with them if unused).
struct PermitBatch {
  int count = 0;
  int64_t shares_taken_ms = 0;
};

class PermitKeeper {
 public:
  // shards: the store's connections, one per shard.
  PermitKeeper(const Config& config, event_base* base, std::vector<AsyncShard*> shards,
               std::function<void()> arrived);
  PermitKeeper(const PermitKeeper&) = delete;
  PermitKeeper& operator=(const PermitKeeper&) = delete;

  // The loop would like `unused` permits on hand for this capped topic now,
  // and `ahead` while the topic is far from its caps (a block, so that the
  // next calls need no Redis call). Extra ones are given back.
  void want(const Topic& topic, int unused, int ahead);
  // Unused permits on hand.
  int available(const std::string& topic);
  // Up to `most` unused permits, for a reserve about to be asked for.
  PermitBatch take(const std::string& topic, int most);
  // Permits taken but not used (the reserve brought fewer jobs).
  void put_back(const std::string& topic, PermitBatch batch);
  // The call a permit was taken for ended: a max_in_flight permit goes back
  // on the hand (the lease still counts it), a rate share was used.
  void give_back(const std::string& topic);
  // The consumer stops: what is on hand goes back (a call per topic).
  void stop();
  // Stopped, and nothing is held or being given back.
  bool settled() const;

 private:
  struct TopicPermits {
    Topic caps;  // the settings last wanted with
    int wanted = 0;
    int ahead = 0;
    // max_in_flight: permits the lease counts (as far as this process may
    // use them), and those of them in calls open or lent to reserves.
    int held = 0;
    int used = 0;
    int64_t lease_sent_ms = 0;  // monotonic: when the call that renewed the lease was sent
    bool leased = false;        // lease_sent_ms is set
    // max_rate: unused shares (when taken, how many), oldest first.
    std::deque<std::pair<int64_t, int>> shares;
    int share_count = 0;
    bool far = false;         // the last answer gave blocks: the topic is far from its caps
    int64_t next_try_ms = 0;  // monotonic: not asked again before (a refusal, an error)
    int64_t surplus_ms = -1;  // monotonic: since when more is on hand than wanted
    int64_t idle_ms = -1;     // monotonic: since when none is wanted
    bool asking = false;      // a permit_lease.lua call is out
  };
  static void on_timer(evutil_socket_t fd, short events, void* self);
  // Calls permit_lease.lua for every topic that needs it now, and sets the
  // timer for the next.
  void run();
  // The timer goes off by `at_ms` at the latest.
  void wake_by(int64_t at_ms);
  // Used later than this after its lease was renewed (or a share after it
  // was taken), a permit's lease could end before its call does.
  int64_t most_age_ms() const;
  bool fresh(const TopicPermits& permits, int64_t now) const;
  int on_hand(const TopicPermits& permits, int64_t now) const;
  // When the topic's lease needs a call to permit_lease.lua (INT64_MAX: not now).
  int64_t due_ms(TopicPermits& permits, int64_t now);
  void sync(const std::string& topic, TopicPermits& permits);
  void answered(const std::string& topic, int64_t sent_ms, Result<const redisReply*> reply);
  AsyncShard* connection_for(const std::string& topic);

  const Config& config_;
  std::vector<AsyncShard*> shards_;
  std::function<void()> arrived_;
  std::string holder_;  // unique per process and start
  uint64_t seq_ = 0;
  RepeatLog errors_;
  UniqueEvent timer_;
  std::map<std::string, TopicPermits> topics_;
  int64_t wake_ms_ = 0;  // monotonic: when the timer goes off (0: not set)
  bool stopping_ = false;
};

}  // namespace dq

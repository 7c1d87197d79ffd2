// PermitKeeper: the consumer's permits to call capped topics (max_in_flight,
// max_rate; docs/delivery.md, "Caps per topic"). The state every consumer on
// every host shares lives on the topic's coordination shard
// (common/store/coordination_shard.h), changed only by permit_lease.lua. Its
// own thread makes those calls, so the delivery loop never waits on Redis:
// the loop says how many unused permits it would like per topic (want),
// plans its reserves with the ones on hand (available), takes one per job a
// reserve brings (take) and gives it back when the call ends (give_back).
// Permits that arrive wake the loop (curl_multi_wakeup).
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

#include <curl/curl.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/redis/redis_sync.h"
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
  PermitKeeper(const Config& config, CURLM* multi);
  ~PermitKeeper();  // stops, gives back what is on hand, joins
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
  // True once after permits arrived: the loop should plan its reserves again.
  bool arrived();

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
  };
  void run();
  // Used later than this after its lease was renewed (or a share after it
  // was taken), a permit's lease could end before its call does.
  int64_t most_age_ms() const;
  bool fresh(const TopicPermits& permits, int64_t now) const;
  int on_hand(const TopicPermits& permits, int64_t now) const;
  // When the topic's lease needs a call to permit_lease.lua (INT64_MAX: not now).
  int64_t due_ms(TopicPermits& permits, int64_t now);
  void sync(const std::string& topic, TopicPermits& permits, std::unique_lock<std::mutex>& lock);
  RedisConnection& connection_for(const std::string& topic);

  const Config& config_;
  CURLM* multi_;
  std::string holder_;  // unique per process and start
  uint64_t seq_ = 0;
  std::vector<RedisConnection> shards_;  // keeper thread only
  RepeatLog errors_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, TopicPermits> topics_;
  int64_t wake_ms_ = 0;  // monotonic: when the keeper thread wakes next
  bool arrived_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dq

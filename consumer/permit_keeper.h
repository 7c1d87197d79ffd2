// PermitKeeper: the consumer's permits to call capped topics (max_in_flight,
// max_rate; docs/delivery.md, "Caps per topic"). The state every consumer on
// every host shares lives on the topic's coordination shard
// (common/store/coordination_shard.h), changed only by permit_take.lua and
// permit_release.lua. Its own thread makes those calls, so the delivery loop
// never waits on Redis: the loop says how many unused permits it would like
// per topic (want), plans its reserves with the ones on hand (available),
// takes one per job a reserve brings (take) and gives it back when the call
// ends (give_back). Permits that arrive wake the loop (curl_multi_wakeup).
//
// Permits are taken before jobs are reserved, so a topic at its cap leaves
// its jobs ready: they hold no slot and no lease, and use no attempt. A taker
// that is told to wait retries when the bucket refills (the wait
// permit_take.lua computes), when a call of this process ends, or within
// kFullRetryMs while max_in_flight is full: never in a spin. A coordination
// shard that cannot be asked gives no permits: the topic's calls pause.
#pragma once

#include <curl/curl.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/redis/redis_sync.h"
#include "common/registry/registry.h"

namespace dq {

// A permit on hand: its id ("" when the topic has only a rate cap) and when
// it was taken (monotonic ms).
struct Permit {
  std::string id;
  int64_t taken_ms = 0;
};

class PermitKeeper {
 public:
  PermitKeeper(const Config& config, CURLM* multi);
  ~PermitKeeper();  // stops, gives back unused permits, joins
  PermitKeeper(const PermitKeeper&) = delete;
  PermitKeeper& operator=(const PermitKeeper&) = delete;

  // The loop would like `unused` permits on hand for this capped topic
  // (extra ones are given back).
  void want(const Topic& topic, int unused);
  // Unused permits on hand.
  int available(const std::string& topic);
  // Up to `most` unused permits, for a reserve about to be asked for.
  std::vector<Permit> take(const std::string& topic, int most);
  // Permits taken but not used (the reserve brought fewer jobs).
  void put_back(const std::string& topic, std::vector<Permit> permits);
  // The call a permit was taken for ended. A max_in_flight permit still
  // fresh (see expire_unused) goes back to the hand when the topic wants
  // more, rather than to Redis and back: the permit is held all along.
  void give_back(const std::string& topic, Permit permit);
  // True once after permits arrived: the loop should plan its reserves again.
  bool arrived();

 private:
  struct TopicPermits {
    Topic caps;  // the settings last wanted with
    std::deque<Permit> unused;
    int wanted = 0;
    int64_t next_try_ms = 0;            // monotonic
    std::vector<std::string> ended;     // permits of calls that ended
    std::vector<std::string> unneeded;  // permits given back unused
    int refund = 0;                     // unneeded rate shares
    int64_t first_ended_ms = 0;         // monotonic: when `ended` stopped being empty
  };
  void run();
  // Used later than this after being taken, a permit's lease could end
  // before its call does.
  int64_t most_age_ms() const;
  // Drops stale unused permits (their lease may run out during a call).
  void expire_unused(TopicPermits& permits, int64_t now);
  void give_back_unused(TopicPermits& permits, size_t keep);
  void release(const std::string& topic, TopicPermits& permits, std::unique_lock<std::mutex>& lock);
  void acquire(const std::string& topic, TopicPermits& permits, int64_t now,
               std::unique_lock<std::mutex>& lock);
  RedisConnection& connection_for(const std::string& topic);

  const Config& config_;
  CURLM* multi_;
  std::string id_prefix_;  // unique per process and start
  uint64_t seq_ = 0;
  std::vector<RedisConnection> shards_;  // keeper thread only
  RepeatLog errors_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, TopicPermits> topics_;
  bool arrived_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dq

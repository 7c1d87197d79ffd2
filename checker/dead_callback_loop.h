// DeadCallbackLoop: the checker's thread that sends dead-letter callbacks.
// Each turn it claims, shard by shard, the due entries of the dead-letter
// callback outbox (common/store/dead_callbacks.h) one at a time for a lease,
// and POSTs each to its topic's dead_callback as a JSON document, signed with
// the topic's Standard Webhooks keys as its callbacks are (webhook-id stable
// per death). A 2xx removes the entry; anything else (another status, a
// timeout, a refused connection) makes it due again after 1 s, 2 s, 4 s ...
// up to 5 min, until a day after the job died, when it is given up (logged,
// counted). At least once: a checker killed after the receiver took the call
// but before the removal leaves the entry to be sent again once its lease
// ends. Every checker of every host runs one; the lease keeps two from
// sending the same entry at once. docs/callbacks.md, "Dead-letter callback".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/redis/redis_sync.h"
#include "common/registry/callback_url.h"
#include "common/registry/topic_cache.h"
#include "common/store/dead_callbacks.h"

namespace dq {

class DeadCallbackLoop {
 public:
  explicit DeadCallbackLoop(const Config& config);

  // Sends until stop_requested().
  void run();

 private:
  // Claims and sends the shard's due entries (at most a turn's worth);
  // returns how many it handled.
  int turn(size_t shard);
  void send(RedisConnection& shard, const DeadCallbackEntry& entry, int64_t redis_now_ms);
  void retry(RedisConnection& shard, const DeadCallbackEntry& entry, int64_t redis_now_ms,
             const std::string& error);
  void finish(RedisConnection& shard, const DeadCallbackEntry& entry, const char* outcome);

  const Config& config_;
  std::vector<std::unique_ptr<RedisConnection>> shards_;
  std::vector<RepeatLog> outages_;
  TopicCache topics_;
  CallbackPolicy policy_;
  std::string claim_;  // this checker's name in the claims it makes
};

}  // namespace dq

// SentinelAsk: asks a Sentinel-managed shard's sentinels, one after another
// on the caller's libevent loop, for its primary's address (SENTINEL
// get-master-addr-by-name), without blocking the loop. AsyncShard uses it
// before each connect and checks the node's ROLE itself.
#pragma once

#include <event2/event.h>
#include <hiredis/async.h>

#include <functional>
#include <string>

#include "common/core/event_handles.h"
#include "common/core/shard.h"
#include "common/core/status.h"

namespace dq {

class SentinelAsk {
 public:
  using Done = std::function<void(Result<HostPort>)>;

  SentinelAsk(event_base* base, ShardAddress shard, int timeout_ms);
  ~SentinelAsk();  // a question in flight is dropped; its Done never runs
  SentinelAsk(const SentinelAsk&) = delete;
  SentinelAsk& operator=(const SentinelAsk&) = delete;

  // Asks the sentinels starting with the first-th (mod their count) until one
  // names the primary; `done` runs once, on the loop, with the address or
  // kUnavailable saying what each sentinel answered. One question at a time.
  void start(size_t first, Done done);
  bool busy() const { return done_ != nullptr; }

 private:
  void ask_next();
  void finish_attempt(const std::string& why);
  void drop_context();
  static void on_connect(const redisAsyncContext* context, int status);
  static void on_reply(redisAsyncContext* context, void* reply, void* privdata);
  static void on_timeout(evutil_socket_t fd, short what, void* arg);

  event_base* base_;
  ShardAddress shard_;
  int timeout_ms_;
  Done done_;
  size_t next_ = 0;       // the index of the next sentinel to ask
  size_t remaining_ = 0;  // sentinels not yet asked in this question
  std::string said_;      // what the sentinels asked so far answered
  redisAsyncContext* context_ = nullptr;
  UniqueEvent timer_;
};

}  // namespace dq

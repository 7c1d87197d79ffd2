// ReadyFeed: one SUBSCRIBE connection per Redis shard to the channel the
// scripts that make a pull topic's jobs ready publish on ({dq}:ready,
// common/store/lua/lib/prelude.lua publish_ready), driven by the API
// server's libevent loop. Each message names a topic; `ready(topic)` wakes
// that topic's long polls (server/pull_queue.h). A connection that drops
// is made again every 500 ms; when a subscription starts (again), every
// long poll is woken (`ready("")`): a publish may have been missed.
#pragma once

#include <event2/event.h>
#include <hiredis/async.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/core/event_handles.h"
#include "common/redis/async_shard.h"

namespace dq {

class ReadyFeed {
 public:
  // shards: the job store's connections, for each shard's address (a
  // Sentinel-managed shard's primary as last resolved).
  ReadyFeed(event_base* base, std::vector<AsyncShard*> shards,
            std::function<void(const std::string& topic)> ready);
  ~ReadyFeed();
  ReadyFeed(const ReadyFeed&) = delete;
  ReadyFeed& operator=(const ReadyFeed&) = delete;

  void start();
  // Every shard's subscription is on: a publish cannot be missed now.
  bool all_up() const;

 private:
  struct Link {
    ReadyFeed* feed = nullptr;
    size_t shard = 0;
    redisAsyncContext* context = nullptr;
    bool subscribed = false;
  };
  void connect(Link* link);
  static void on_connect(const redisAsyncContext* context, int status);
  static void on_disconnect(const redisAsyncContext* context, int status);
  static void on_message(redisAsyncContext* context, void* reply, void* privdata);
  static void on_tick(evutil_socket_t fd, short what, void* arg);

  event_base* base_;
  std::vector<AsyncShard*> shards_;
  std::function<void(const std::string&)> ready_;
  std::vector<std::unique_ptr<Link>> links_;
  UniqueEvent tick_;
  bool started_ = false;
  bool stopping_ = false;
};

}  // namespace dq

// AsyncShard: one hiredis async connection to one Redis shard, driven by the
// server's libevent loop. Concurrent requests share it, so their commands
// pipeline instead of waiting for each other. It reconnects on its own after
// a drop, and fails commands that take longer than the command timeout
// (hiredis 0.14 has no async timeout of its own).
#pragma once

#include <event2/event.h>
#include <hiredis/async.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/core/event_handles.h"
#include "common/core/shard.h"
#include "common/core/status.h"
#include "common/redis/script_call.h"
#include "common/redis/sentinel_ask.h"

namespace dq {

class AsyncShard {
 public:
  // The reply is only valid during the callback.
  using ReplyCallback = std::function<void(Result<const redisReply*>)>;

  AsyncShard(event_base* base, ShardAddress address, int connect_timeout_ms,
             int command_timeout_ms);
  ~AsyncShard();
  AsyncShard(const AsyncShard&) = delete;
  AsyncShard& operator=(const AsyncShard&) = delete;

  void start();  // connect now; reconnects every 500 ms while down
  // Down for good: commands still waiting fail now (kUnavailable), later ones
  // fail at once. Their callbacks run inside this call.
  void stop();
  bool up() const { return up_; }
  // A connect (or its AUTH, or asking the sentinels) is in progress.
  bool connecting() const {
    return (context_ != nullptr && !up_) || (sentinel_ask_ != nullptr && sentinel_ask_->busy());
  }
  // The first connect has ended, up or failed: until then "down" only means
  // "not connected yet".
  bool first_connect_ended() const { return first_connect_ended_; }
  // For a Sentinel-managed shard host/port are the primary last resolved.
  const ShardAddress& address() const { return address_; }
  const std::string& last_error() const { return last_error_; }
  size_t pending() const { return pending_count_; }

  // When the shard is down the callback runs at once with kUnavailable (not
  // sent). A command dropped with its connection gets kUnknown (it may have
  // run). A Redis error reply that refuses the command in the shard's state
  // (full, read-only, cannot persist: common/redis/redis_refusal.h) arrives as
  // kUnavailable, nothing written; any other as kInternal with Redis's text.
  void command(const std::vector<std::string>& argv, ReplyCallback callback);
  // The same with its own timeout instead of the command timeout: for a
  // command Redis holds on purpose (BLPOP), which must not fail early.
  void command(const std::vector<std::string>& argv, int timeout_ms, ReplyCallback callback);
  // A read that must not wait for a stalled shard: answered by timeout_ms.
  void probe(const std::vector<std::string>& argv, int timeout_ms, ReplyCallback callback);
  // FCALL; when Redis does not have the function, FUNCTION LOAD and FCALL
  // again.
  void run(ScriptCall call, ReplyCallback callback);
  // Writes the commands queued in this loop turn now instead of at its end
  // (common/redis/redis_loop.h), so Redis can start on them while this process
  // goes on with other work. What the socket does not take is written as
  // before.
  void write_now();

 private:
  struct Pending;
  void connect();
  // A Sentinel-managed shard: ask the sentinels, then connect to the answer.
  void resolve_then_connect();
  // After connect (and AUTH): a Sentinel-managed shard checks ROLE first.
  void check_role_then_up();
  // before_up: send on a connected context that is not up yet (AUTH).
  void send(const std::vector<std::string>& argv, std::unique_ptr<Pending> pending,
            bool before_up = false);
  int pending_timeout_ms(const Pending* pending) const;
  void mark_up();
  // After connect and AUTH: a cluster's virtual shard first asks CLUSTER
  // SLOTS whether this node owns its slot, and goes to the owner if not.
  void check_slot_owner();
  void move_to(const std::string& host, int port, const std::string& why);
  // A command a cluster answered with MOVED, ASK, TRYAGAIN or CLUSTERDOWN: it
  // did not run; it is sent again once the connection is to the owner.
  void park(std::unique_ptr<Pending> pending, int64_t resend_at_ms);
  void resend_parked(bool give_up_only);
  void next_candidate();
  void mark_down(const std::string& why);
  void schedule_reconnect();
  static void on_reply(redisAsyncContext* context, void* reply, void* privdata);
  void call_after_library_load(std::unique_ptr<Pending> pending);
  static void on_connect(const redisAsyncContext* context, int status);
  static void on_disconnect(const redisAsyncContext* context, int status);
  static void on_tick(evutil_socket_t fd, short what, void* arg);

  event_base* base_;
  ShardAddress address_;
  int connect_timeout_ms_;
  int command_timeout_ms_;
  redisAsyncContext* context_ = nullptr;
  bool up_ = false;
  bool first_connect_ended_ = false;
  bool stopping_ = false;
  std::string last_error_ = "not connected yet";
  size_t pending_count_ = 0;
  // Calls that met a Redis without dq's functions, waiting for the load.
  std::vector<std::unique_ptr<Pending>> library_waiting_;
  int64_t connect_started_ms_ = 0;
  std::deque<int64_t> deadlines_ms_;  // of commands awaiting replies, oldest first
  // Cluster only (address_.cluster()): the node believed to own the slot,
  // every node seen in CLUSTER SLOTS (to try when it is gone) and parked
  // commands.
  std::string target_host_;
  int target_port_ = 0;
  std::vector<std::pair<std::string, int>> known_nodes_;
  size_t next_known_ = 0;
  std::deque<std::unique_ptr<Pending>> parked_;
  UniqueEvent tick_;                           // reconnects and timeout checks
  std::unique_ptr<SentinelAsk> sentinel_ask_;  // set for a Sentinel-managed shard
  bool resolved_ = false;      // host/port came from the sentinels since the last drop
  size_t first_sentinel_ = 0;  // moves on when a sentinel named a non-primary
};

}  // namespace dq

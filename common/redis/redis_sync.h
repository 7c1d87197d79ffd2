// A blocking connection to one Redis shard (hiredis redisContext), owned by
// RAII. Used where blocking is right: timers, consumers' Redis thread, dqctl
// and tests. The API server uses hiredis async instead (server/).
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

#include "common/core/shard.h"
#include "common/core/status.h"
#include "common/core/unique_handle.h"
#include "common/redis/script_call.h"

namespace dq {

using ReplyPtr = UniqueHandle<redisReply, freeReplyObject>;
using ContextPtr = UniqueHandle<redisContext, redisFree>;

class RedisConnection {
 public:
  RedisConnection(ShardAddress address, int connect_timeout_ms, int command_timeout_ms);

  const ShardAddress& address() const { return address_; }
  int command_timeout_ms() const { return command_timeout_ms_; }

  // The shard's address; for a Sentinel-managed shard host/port are the
  // primary this connection last resolved (common/redis/sentinel_lookup.h).
  // Connects (and AUTHs) when not connected. Cheap when already connected.
  // A Sentinel-managed shard asks the sentinels for its primary at every
  // connect; none found: kUnavailable.
  Status ensure_connected();
  bool connected() const { return context_ != nullptr; }
  void disconnect() { context_.reset(); }

  // Runs one command. Not connected and cannot connect: kUnavailable (it did
  // not run). An I/O error once sent drops the connection (the next call
  // reconnects) and returns kUnknown: it may have run. A Redis error reply
  // that refuses the command in the shard's present state (full, read-only,
  // cannot persist, loading: common/redis/redis_refusal.h) returns kUnavailable
  // (nothing was written); any other error reply returns kInternal.
  // `timeout_ms` > 0 overrides the command timeout (for BLPOP).
  Result<ReplyPtr> command(const std::vector<std::string>& argv, int timeout_ms = 0);

  // Several commands in one round trip (pipelined), one result per command,
  // in order, each as command() would answer it. A lost connection fails the
  // commands whose replies did not arrive (kUnknown).
  std::vector<Result<ReplyPtr>> command_all(const std::vector<std::vector<std::string>>& commands);

  // FCALL; when Redis does not have the function, FUNCTION LOAD and FCALL
  // again.
  Result<ReplyPtr> run(const ScriptCall& call);
  // Several scripts in one round trip (pipelined), one result per call, in
  // order. A lost connection fails the calls whose replies did not arrive.
  std::vector<Result<ReplyPtr>> run_all(const std::vector<ScriptCall>& calls);
  // Loads the function library unless Redis has it already.
  Status load_library_if_missing(const ScriptLibrary& library);

 private:
  // The Status of an error reply: kUnavailable for a refusal, else kInternal.
  Status error_reply_status(const std::string& error) const;
  // On a Sentinel-managed shard, a reply saying the node is no longer a
  // writable primary makes the next call reconnect through the sentinels.
  void forget_demoted_primary(const std::string& error);
  // A reply saying the function is not loaded, as command() reports it.
  bool is_function_missing_reply(const Status& status) const;

  // A virtual shard of a Redis Cluster: the node owning its tag's slot, found
  // with CLUSTER SLOTS on the seeds (common/redis/cluster_slot.h).
  Status find_slot_owner();
  Result<ReplyPtr> send_once(const std::vector<std::string>& argv, int timeout_ms);
  std::vector<Result<ReplyPtr>> pipeline(const std::vector<std::vector<std::string>>& commands);

  ShardAddress address_;
  int connect_timeout_ms_;
  int command_timeout_ms_;
  ContextPtr context_;
  bool drop_after_reply_ = false;
  std::string target_host_;  // cluster only: where the connection goes
  int target_port_ = 0;
};

}  // namespace dq

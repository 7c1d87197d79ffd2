// RedisConnection: one blocking hiredis connection to a shard, with connect
// and command timeouts, AUTH, binary-safe commands and EVALSHA with an EVAL
// fallback. Any I/O error drops the context so the next call reconnects.
#include "common/redis/redis_sync.h"

#include <sys/time.h>

#include <cstring>
#include <utility>

#include "common/core/shared_metrics.h"
#include "common/redis/redis_argv.h"
#include "common/redis/redis_refusal.h"
#include "common/redis/sentinel_lookup.h"

namespace dq {
namespace {

timeval to_timeval(int ms) {
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = static_cast<suseconds_t>(ms % 1000) * 1000;
  return tv;
}

}  // namespace

RedisConnection::RedisConnection(ShardAddress address, int connect_timeout_ms,
                                 int command_timeout_ms)
    : address_(std::move(address)),
      connect_timeout_ms_(connect_timeout_ms),
      command_timeout_ms_(command_timeout_ms) {}

Status RedisConnection::ensure_connected() {
  if (drop_after_reply_) {
    drop_after_reply_ = false;
    context_.reset();
  }
  if (context_) {
    return Status::ok();
  }
  if (address_.is_sentinel()) {
    // Every (re)connect asks the sentinels: the primary may have moved.
    auto primary = lookup_sentinel_primary(address_, connect_timeout_ms_, command_timeout_ms_);
    if (!primary.is_ok()) {
      return primary.status();
    }
    address_.host = primary->host;
    address_.port = primary->port;
  }
  ContextPtr context(redisConnectWithTimeout(address_.host.c_str(), address_.port,
                                             to_timeval(connect_timeout_ms_)));
  if (!context) {
    return Status(Code::kUnavailable, "Redis shard " + address_.name() + ": out of memory");
  }
  if (context->err) {
    return Status(Code::kUnavailable,
                  "Redis shard " + address_.name() + " is unreachable: " + context->errstr);
  }
  if (redisSetTimeout(context.get(), to_timeval(command_timeout_ms_)) != REDIS_OK) {
    return Status(Code::kUnavailable,
                  "Redis shard " + address_.name() + ": cannot set timeout: " + context->errstr);
  }
  context_ = std::move(context);
  if (!address_.password.empty()) {
    auto reply = command({"AUTH", address_.password});
    if (!reply.is_ok()) {
      context_.reset();
      return Status(Code::kUnavailable, "Redis shard " + address_.name() +
                                            ": AUTH failed: " + reply.status().message());
    }
  }
  return Status::ok();
}

Result<ReplyPtr> RedisConnection::command(const std::vector<std::string>& argv, int timeout_ms) {
  Status connected = ensure_connected();
  if (!connected.is_ok()) {
    count_redis_command_error(address_.name());
    return connected;
  }

  RedisArgv args(argv);

  bool overridden = timeout_ms > 0 && timeout_ms != command_timeout_ms_;
  if (overridden) {
    redisSetTimeout(context_.get(), to_timeval(timeout_ms));
  }
  ReplyPtr reply(static_cast<redisReply*>(
      redisCommandArgv(context_.get(), args.count(), args.pointers(), args.lengths())));
  if (!reply) {
    // The command may have reached Redis and run: only the answer is missing.
    std::string error = context_->errstr;
    context_.reset();
    count_redis_command_error(address_.name());
    return Status(Code::kUnknown, "Redis shard " + address_.name() + ": " +
                                      (error.empty() ? "connection lost" : error) +
                                      "; outcome unknown");
  }
  if (overridden) {
    redisSetTimeout(context_.get(), to_timeval(command_timeout_ms_));
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    std::string error(reply->str, reply->len);
    if (error.rfind("NOSCRIPT", 0) != 0) {
      count_redis_command_error(address_.name());  // run() loads it
    }
    forget_demoted_primary(error);
    return error_reply_status(error);
  }
  return reply;
}

std::vector<Result<ReplyPtr>> RedisConnection::command_all(
    const std::vector<std::vector<std::string>>& commands) {
  std::vector<Result<ReplyPtr>> results;
  results.reserve(commands.size());
  Status connected = ensure_connected();
  if (!connected.is_ok()) {
    for (size_t i = 0; i < commands.size(); ++i) {
      results.emplace_back(connected);
    }
    return results;
  }
  for (const auto& argv : commands) {
    RedisArgv args(argv);
    redisAppendCommandArgv(context_.get(), args.count(), args.pointers(), args.lengths());
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (!context_ || redisGetReply(context_.get(), &raw) != REDIS_OK) {
      std::string error = context_ && context_->errstr[0] ? context_->errstr : "connection lost";
      context_.reset();
      results.emplace_back(Status(
          Code::kUnknown, "Redis shard " + address_.name() + ": " + error + "; outcome unknown"));
      continue;
    }
    ReplyPtr reply(static_cast<redisReply*>(raw));
    if (reply->type == REDIS_REPLY_ERROR) {
      forget_demoted_primary(std::string(reply->str, reply->len));
      results.emplace_back(error_reply_status(std::string(reply->str, reply->len)));
    } else {
      results.emplace_back(std::move(reply));
    }
  }
  return results;
}

void RedisConnection::forget_demoted_primary(const std::string& error) {
  // READONLY: the node became a replica; LOADING: it restarted. The next
  // command asks the sentinels again (the current reply is still read).
  if (address_.is_sentinel() && context_ && is_role_change_refusal(error)) {
    drop_after_reply_ = true;
  }
}

Status RedisConnection::error_reply_status(const std::string& error) const {
  if (is_state_refusal(error)) {
    return refusal_status(address_.name(), error);
  }
  return Status(Code::kInternal, "Redis shard " + address_.name() + ": " + error);
}

bool RedisConnection::is_noscript(const Status& status) const {
  const std::string noscript = "Redis shard " + address_.name() + ": NOSCRIPT";
  return status.code() == Code::kInternal &&
         status.message().compare(0, noscript.size(), noscript) == 0;
}

std::vector<Result<ReplyPtr>> RedisConnection::run_all(const std::vector<ScriptCall>& calls) {
  std::vector<std::vector<std::string>> commands;
  commands.reserve(calls.size());
  for (const auto& call : calls) {
    commands.push_back(call.evalsha_argv());
  }
  std::vector<Result<ReplyPtr>> results = command_all(commands);
  // Scripts not cached yet are rerun one by one, once the pipe is read.
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!results[i].is_ok() && is_noscript(results[i].status())) {
      results[i] = run(calls[i]);
    }
  }
  return results;
}

Result<ReplyPtr> RedisConnection::run(const ScriptCall& call) {
  Status connected = ensure_connected();
  if (!connected.is_ok()) {
    return connected;
  }
  // Look at the raw reply: a NOSCRIPT error means the script cache is empty
  // (a fresh or restarted Redis); EVAL runs it and caches it for next time.
  auto reply = command(call.evalsha_argv());
  if (reply.is_ok() || !is_noscript(reply.status())) {
    return reply;
  }
  return command(call.eval_argv());
}

}  // namespace dq

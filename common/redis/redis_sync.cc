// RedisConnection: one blocking hiredis connection to a shard, with connect
// and command timeouts, AUTH, binary-safe commands and FCALL of dq's functions (loading
// the library when Redis has not got it). Any I/O error drops the context so the next call
// reconnects.
#include "common/redis/redis_sync.h"

#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "common/core/shared_metrics.h"
#include "common/redis/cluster_slot.h"
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
  std::string host = address_.host;
  int port = address_.port;
  if (address_.cluster()) {
    if (target_host_.empty()) {
      Status found = find_slot_owner();
      if (!found.is_ok()) {
        return found;
      }
    }
    host = target_host_;
    port = target_port_;
  }
  ContextPtr context(redisConnectWithTimeout(host.c_str(), port, to_timeval(connect_timeout_ms_)));
  if (!context) {
    return Status(Code::kUnavailable, "Redis shard " + address_.name() + ": out of memory");
  }
  if (context->err) {
    target_host_.clear();  // a cluster node gone: ask the seeds again
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

Status RedisConnection::find_slot_owner() {
  int slot = key_slot(address_.key_tag());
  std::vector<ClusterNode> candidates;
  for (const auto& seed : address_.cluster_seeds) {
    candidates.push_back({seed.host, seed.port});
  }
  std::string last_error = "no seed answered";
  for (const auto& node : candidates) {
    ContextPtr context(
        redisConnectWithTimeout(node.host.c_str(), node.port, to_timeval(connect_timeout_ms_)));
    if (!context || context->err) {
      last_error = context ? context->errstr : "out of memory";
      continue;
    }
    redisSetTimeout(context.get(), to_timeval(command_timeout_ms_));
    if (!address_.password.empty()) {
      ReplyPtr auth(static_cast<redisReply*>(redisCommand(
          context.get(), "AUTH %b", address_.password.data(), address_.password.size())));
      if (!auth || auth->type == REDIS_REPLY_ERROR) {
        last_error = "AUTH failed";
        continue;
      }
    }
    ReplyPtr slots(static_cast<redisReply*>(redisCommand(context.get(), "CLUSTER SLOTS")));
    if (!slots) {
      last_error = context->errstr;
      continue;
    }
    if (auto owner = slot_owner(slots.get(), slot)) {
      target_host_ = owner->host.empty() ? node.host : owner->host;
      target_port_ = owner->port;
      return Status::ok();
    }
    last_error = "no node serves slot " + std::to_string(slot);
  }
  return Status(Code::kUnavailable,
                "Redis shard " + address_.name() + ": cluster unreachable: " + last_error);
}

// A cluster answer that moves or delays a command ran nothing: follow MOVED
// (the map changed: reconnect to the new owner), wait out ASK, TRYAGAIN and
// CLUSTERDOWN (a slot migrating or a failover) for up to ~3 s, then retry.
Result<ReplyPtr> RedisConnection::command(const std::vector<std::string>& argv, int timeout_ms) {
  if (!address_.cluster()) {
    return send_once(argv, timeout_ms);
  }
  std::vector<std::string> sent = retag_command(argv, address_.key_tag());
  Result<ReplyPtr> reply = send_once(sent, timeout_ms);
  for (int attempt = 0; attempt < 60 && !reply.is_ok(); ++attempt) {
    const std::string& message = reply.status().message();
    size_t at = message.find(": ");
    std::string error = at == std::string::npos ? message : message.substr(at + 2);
    auto redirect = parse_redirect(error);
    if (redirect && !redirect->ask) {
      target_host_ = redirect->host.empty() ? target_host_ : redirect->host;
      target_port_ = redirect->port;
      context_.reset();
    } else if (redirect || is_cluster_retry(error) || reply.status().code() == Code::kUnavailable) {
      if (reply.status().code() == Code::kUnavailable && !redirect && !is_cluster_retry(error) &&
          attempt >= 3) {
        break;  // a node down for good, or refusing: as outside a cluster
      }
      usleep(50000);
    } else {
      break;
    }
    reply = send_once(sent, timeout_ms);
  }
  if (reply.is_ok() && is_scan(argv)) {
    untag_scan_reply(reply->get(), address_.key_tag());
  }
  return reply;
}

Result<ReplyPtr> RedisConnection::send_once(const std::vector<std::string>& argv, int timeout_ms) {
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
    target_host_.clear();
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
    if (!is_function_missing(error)) {
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
  if (address_.cluster()) {
    // Pipelined too, but each retagged, and any redirected command again on
    // its own (command() follows it).
    std::vector<std::vector<std::string>> sent;
    for (const auto& argv : commands) {
      sent.push_back(retag_command(argv, address_.key_tag()));
    }
    std::vector<Result<ReplyPtr>> first = pipeline(sent);
    for (size_t i = 0; i < first.size(); ++i) {
      const std::string& message = first[i].is_ok() ? std::string() : first[i].status().message();
      bool moved = message.find(": MOVED ") != std::string::npos ||
                   message.find(": ASK ") != std::string::npos ||
                   message.find(": TRYAGAIN") != std::string::npos ||
                   message.find(": CLUSTERDOWN") != std::string::npos;
      if (moved) {
        results.push_back(command(commands[i]));
      } else {
        if (first[i].is_ok() && is_scan(commands[i])) {
          untag_scan_reply(first[i]->get(), address_.key_tag());
        }
        results.push_back(std::move(first[i]));
      }
    }
    return results;
  }
  return pipeline(commands);
}

std::vector<Result<ReplyPtr>> RedisConnection::pipeline(
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

bool RedisConnection::is_function_missing_reply(const Status& status) const {
  const std::string prefix = "Redis shard " + address_.name() + ": ";
  return status.code() == Code::kInternal &&
         status.message().compare(0, prefix.size(), prefix) == 0 &&
         is_function_missing(status.message());
}

std::vector<Result<ReplyPtr>> RedisConnection::run_all(const std::vector<ScriptCall>& calls) {
  std::vector<std::vector<std::string>> commands;
  commands.reserve(calls.size());
  for (const auto& call : calls) {
    commands.push_back(call.call_argv());
  }
  std::vector<Result<ReplyPtr>> results = command_all(commands);
  // Calls that met a Redis without the library are made again one by one
  // (the first loads it), once the pipe is read.
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!results[i].is_ok() && is_function_missing_reply(results[i].status())) {
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
  // A Redis without dq's function library (new, flushed, restarted without
  // its data) answers that the function is not found: load it, call again.
  auto reply = command(call.call_argv());
  if (reply.is_ok() || !is_function_missing_reply(reply.status())) {
    return reply;
  }
  auto loaded = command(call.load_argv());
  if (!loaded.is_ok()) {
    return library_load_failed(address_.name(), loaded.status());
  }
  return command(call.call_argv());
}

Status RedisConnection::load_library_if_missing(const ScriptLibrary& library) {
  // Asked first: FUNCTION LIST is a read, a load a write, which a Redis
  // holding writes (CLIENT PAUSE, a failover) would keep the caller waiting for.
  auto listed = command({"FUNCTION", "LIST", "LIBRARYNAME", library.name});
  if (!listed.is_ok()) {
    return listed.status();
  }
  if ((*listed)->type == REDIS_REPLY_ARRAY && (*listed)->elements > 0) {
    return Status::ok();
  }
  auto loaded = command(library_load_argv(library));
  return loaded.is_ok() ? Status::ok() : loaded.status();
}

}  // namespace dq

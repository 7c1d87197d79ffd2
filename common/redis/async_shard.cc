// Implementation notes: hiredis calls every pending callback with a NULL
// reply when a context is freed or dropped, and replies arrive in the order
// commands were sent, so a deque of deadlines is enough to find the oldest
// command still waiting and enforce its timeout (a command sent behind a
// longer one, such as a BLPOP, waits with it).
#include "common/redis/async_shard.h"

#include <cstring>
#include <memory>
#include <optional>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/redis/async_shard_pending.h"
#include "common/redis/cluster_slot.h"
#include "common/redis/redis_argv.h"
#include "common/redis/redis_loop.h"
#include "common/redis/redis_refusal.h"
#include "common/redis/sentinel_lookup.h"

namespace dq {

AsyncShard::AsyncShard(event_base* base, ShardAddress address, int connect_timeout_ms,
                       int command_timeout_ms)
    : base_(base),
      address_(std::move(address)),
      connect_timeout_ms_(connect_timeout_ms),
      command_timeout_ms_(command_timeout_ms) {
  if (address_.is_sentinel()) {
    sentinel_ask_ = std::make_unique<SentinelAsk>(base_, address_, connect_timeout_ms_);
  }
}

AsyncShard::~AsyncShard() { stop(); }

void AsyncShard::stop() {
  stopping_ = true;
  tick_.reset();
  sentinel_ask_.reset();
  std::deque<std::unique_ptr<Pending>> parked;
  parked.swap(parked_);
  for (auto& pending : parked) {
    pending->callback(Status(Code::kUnavailable, "redis shard " + address_.name() + " stopped"));
  }
  if (context_ != nullptr) {
    redisAsyncContext* context = context_;
    context_ = nullptr;
    up_ = false;
    redisAsyncFree(context);
  }
}

void AsyncShard::start() {
  if (tick_ == nullptr) {
    tick_.reset(event_new(base_, -1, EV_PERSIST, &AsyncShard::on_tick, this));
    timeval every{0, 100000};
    event_add(tick_.get(), &every);
  }
  connect();
}

void AsyncShard::connect() {
  if (context_ != nullptr || stopping_) {
    return;
  }
  if (address_.is_sentinel() && !resolved_) {
    resolve_then_connect();
    return;
  }
  if (address_.cluster() && target_host_.empty()) {
    next_candidate();
  }
  const std::string& host = address_.cluster() ? target_host_ : address_.host;
  int port = address_.cluster() ? target_port_ : address_.port;
  redisAsyncContext* context = redisAsyncConnect(host.c_str(), port);
  if (context == nullptr || context->err) {
    last_error_ = context ? context->errstr : "out of memory";
    first_connect_ended_ = true;
    if (context) {
      redisAsyncFree(context);
    }
    return;  // the tick retries
  }
  context->data = this;
  attach_to_loop(context, base_);
  redisAsyncSetConnectCallback(context, &AsyncShard::on_connect);
  redisAsyncSetDisconnectCallback(context, &AsyncShard::on_disconnect);
  context_ = context;
  connect_started_ms_ = monotonic_ms();
}

void AsyncShard::resolve_then_connect() {
  if (sentinel_ask_ == nullptr || sentinel_ask_->busy()) {
    return;
  }
  connect_started_ms_ = monotonic_ms();  // the tick waits 500 ms before asking again
  sentinel_ask_->start(first_sentinel_, [this](Result<HostPort> primary) {
    if (!primary.is_ok()) {
      mark_down(primary.status().message());
      return;
    }
    if (address_.host != primary->host || address_.port != primary->port) {
      err_log().info("redis shard {}: the sentinels name {} as the primary", address_.name(),
                     primary->text());
    }
    address_.host = primary->host;
    address_.port = primary->port;
    resolved_ = true;
    connect();
  });
}

void AsyncShard::check_role_then_up() {
  if (!address_.is_sentinel()) {
    check_slot_owner();  // up at once unless a cluster's virtual shard
    return;
  }
  // A stale sentinel may name a replica (or a node not yet promoted): up only
  // on a primary; otherwise ask again, from the next sentinel.
  auto pending = std::make_unique<Pending>(Pending{
      this,
      [this](const Result<const redisReply*>& reply) {
        if (context_ == nullptr || (!reply.is_ok() && reply.status().code() == Code::kUnknown)) {
          return;  // the connection dropped: on_disconnect marks it down
        }
        std::string role = reply.is_ok() ? role_from_reply(*reply) : "";
        if (role == "master") {
          mark_up();
          return;
        }
        if (reply.is_ok()) {
          ++first_sentinel_;
        }
        mark_down("the sentinels named " + address_.host + ":" + std::to_string(address_.port) +
                  (reply.is_ok()
                       ? ", whose ROLE is " + (role.empty() ? std::string("unknown") : role)
                       : ", which does not answer ROLE: " + reply.status().message()) +
                  ": not the primary");
        redisAsyncDisconnect(context_);
      },
      std::nullopt});
  send({"ROLE"}, std::move(pending), /*before_up=*/true);
}

void AsyncShard::on_connect(const redisAsyncContext* context, int status) {
  auto* self = static_cast<AsyncShard*>(context->data);
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback.
    self->context_ = nullptr;
    if (self->address_.cluster()) {
      self->target_host_.clear();  // gone or moved: try the next node
    }
    self->mark_down(context->errstr);
    return;
  }
  if (self->address_.password.empty()) {
    self->check_role_then_up();
    return;
  }
  // The shard counts as up only once AUTH is accepted: until then commands
  // would fail with NOAUTH (500) instead of 503. A refused AUTH is a Redis
  // error, not a lost connection: mark it down (logged once per reason) and
  // let the tick reconnect. hiredis defers the disconnect until the callback
  // returns.
  auto pending = std::make_unique<Pending>(
      Pending{self,
              [self](const Result<const redisReply*>& reply) {
                if (reply.is_ok()) {
                  self->check_role_then_up();
                } else if (reply.status().code() != Code::kUnknown && self->context_ != nullptr) {
                  self->mark_down("AUTH failed: " + reply.status().message());
                  redisAsyncDisconnect(self->context_);
                }
              },
              std::nullopt});
  self->send({"AUTH", self->address_.password}, std::move(pending), /*before_up=*/true);
}

void AsyncShard::mark_up() {
  up_ = true;
  first_connect_ended_ = true;
  err_log().info("redis shard {} is up", address_.name());
  last_error_.clear();
  resend_parked(false);
}

void AsyncShard::on_disconnect(const redisAsyncContext* context, int /*status*/) {
  auto* self = static_cast<AsyncShard*>(context->data);
  self->context_ = nullptr;
  self->resolved_ = false;
  if (self->stopping_) {
    self->up_ = false;  // closed on purpose (stop()): nothing to report
    return;
  }
  // Marked down already (a timeout, a refused AUTH): keep that reason.
  if (!self->up_ && !self->last_error_.empty()) {
    return;
  }
  self->mark_down(context->err ? context->errstr : "connection closed");
}

void AsyncShard::mark_down(const std::string& why) {
  if (up_ || last_error_ != why) {
    err_log().warn("redis shard {} is down: {}", address_.name(), why);
  }
  up_ = false;
  first_connect_ended_ = true;
  last_error_ = why;
  deadlines_ms_.clear();
  resolved_ = false;  // a Sentinel-managed shard asks again before reconnecting
}

void AsyncShard::on_tick(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* self = static_cast<AsyncShard*>(arg);
  int64_t now = monotonic_ms();
  if (!self->parked_.empty()) {
    self->resend_parked(false);
  }
  if (self->context_ == nullptr) {
    // Reconnect at most every 500 ms.
    if (now - self->connect_started_ms_ >= 500) {
      self->connect();
    }
    return;
  }
  bool connect_slow = !self->up_ && now - self->connect_started_ms_ > self->connect_timeout_ms_;
  bool command_slow = !self->deadlines_ms_.empty() && now > self->deadlines_ms_.front();
  if (command_slow && !connect_slow) {
    // The reply may be waiting unread: this process was paused (SIGSTOP, a
    // VM's stolen time), or the loop has not reached the socket's event in
    // this turn. Read what is there before judging the command late; with
    // nothing there the read just finds the socket empty.
    redisAsyncHandleRead(self->context_);
    if (self->context_ == nullptr) {
      return;  // the read found the connection closed
    }
    command_slow = !self->deadlines_ms_.empty() && now > self->deadlines_ms_.front();
  }
  if (connect_slow || command_slow) {
    redisAsyncContext* context = self->context_;
    self->context_ = nullptr;
    self->mark_down(connect_slow ? "connect timed out" : "command timed out");
    context->data = self;
    redisAsyncFree(context);  // fails every pending command with a NULL reply
  }
}

void AsyncShard::command(const std::vector<std::string>& argv, ReplyCallback callback) {
  send(argv, std::make_unique<Pending>(Pending{this, std::move(callback), std::nullopt}));
}

void AsyncShard::command(const std::vector<std::string>& argv, int timeout_ms,
                         ReplyCallback callback) {
  send(argv,
       std::make_unique<Pending>(Pending{this, std::move(callback), std::nullopt, timeout_ms}));
}

// A probe answers within timeout_ms whatever Redis does: when the reply is
// late the callback gets kUnavailable at the deadline and the reply, when it
// comes, is dropped. The command's own callback owns the probe and frees the
// deadline timer, so the timer never outlives it.
void AsyncShard::probe(const std::vector<std::string>& argv, int timeout_ms,
                       ReplyCallback callback) {
  struct Probe {
    ReplyCallback callback;
    UniqueEvent deadline;
    bool answered = false;
    std::string shard;
  };
  auto probe = std::make_shared<Probe>();
  probe->callback = std::move(callback);
  probe->shard = address_.name();
  command(argv, [probe](Result<const redisReply*> reply) {
    probe->deadline.reset();
    if (probe->answered) {
      return;
    }
    probe->answered = true;
    probe->callback(std::move(reply));
  });
  if (probe->answered) {
    return;
  }
  probe->deadline.reset(evtimer_new(
      base_,
      [](evutil_socket_t, short, void* arg) {
        auto* self = static_cast<Probe*>(arg);
        self->deadline.reset();
        self->answered = true;
        self->callback(
            Status(Code::kUnavailable, "redis shard " + self->shard + " did not answer in time"));
      },
      probe.get()));
  timeval wait{timeout_ms / 1000, static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
  evtimer_add(probe->deadline.get(), &wait);
}

void AsyncShard::run(ScriptCall call, ReplyCallback callback) {
  std::vector<std::string> argv = call.call_argv();
  send(argv, std::make_unique<Pending>(Pending{this, std::move(callback), std::move(call)}));
}

void AsyncShard::call_after_library_load(std::unique_ptr<Pending> pending) {
  // A Redis without dq's function library (new, flushed, restarted without
  // its data): one load, however many calls were answered so, then each
  // call again. A load that fails fails them: none of them ran.
  library_waiting_.push_back(std::move(pending));
  if (library_waiting_.size() > 1) {
    return;
  }
  ScriptCall call = *library_waiting_.front()->script;
  auto loaded = [this](const Result<const redisReply*>& reply) {
    std::vector<std::unique_ptr<Pending>> waiting = std::move(library_waiting_);
    library_waiting_.clear();
    for (auto& again : waiting) {
      if (!reply.is_ok()) {
        again->callback(library_load_failed(address_.name(), reply.status()));
        continue;
      }
      std::vector<std::string> argv = again->script->call_argv();
      again->script.reset();
      again->argv = argv;
      send(argv, std::move(again));
    }
  };
  send(call.load_argv(), std::make_unique<Pending>(Pending{this, loaded, std::nullopt}));
}

int AsyncShard::pending_timeout_ms(const Pending* pending) const {
  return pending->timeout_ms > 0 ? pending->timeout_ms : command_timeout_ms_;
}

void AsyncShard::write_now() {
  if (context_ == nullptr || (context_->c.flags & REDIS_CONNECTED) == 0) {
    return;
  }
  // An error stays in the context: the queued end-of-turn write meets it
  // and disconnects as it would have.
  int done = 0;
  redisBufferWrite(&context_->c, &done);
}

void AsyncShard::send(const std::vector<std::string>& argv, std::unique_ptr<Pending> pending,
                      bool before_up) {
  if (address_.cluster() && !before_up && pending->argv.empty()) {
    pending->argv = argv;
    pending->give_up_ms = monotonic_ms() + pending_timeout_ms(pending.get());
  }
  if (address_.cluster() && !before_up && (!up_ || context_ == nullptr) && !parked_.empty() &&
      monotonic_ms() <= pending->give_up_ms) {
    // Moving to another node with commands parked: wait with them.
    return park(std::move(pending), 0);
  }
  if ((!up_ && !before_up) || context_ == nullptr) {
    count_redis_command_error(address_.name());
    pending->callback(
        Status(Code::kUnavailable, "redis shard " + address_.name() + " is down: " + last_error_));
    return;
  }
  std::string command = address_.cluster() && !before_up
                            ? resp_command(retag_command(argv, address_.key_tag()))
                            : resp_command(argv);
  Pending* raw = pending.release();
  if (redisAsyncFormattedCommand(context_, &AsyncShard::on_reply, raw, command.data(),
                                 command.size()) != REDIS_OK) {
    std::unique_ptr<Pending> owned(raw);
    count_redis_command_error(address_.name());
    owned->callback(
        Status(Code::kUnavailable, "redis shard " + address_.name() + ": cannot send command"));
    return;
  }
  ++pending_count_;
  int timeout_ms = pending_timeout_ms(raw);
  deadlines_ms_.push_back(monotonic_ms() + timeout_ms);
}

void AsyncShard::on_reply(redisAsyncContext* /*context*/, void* reply_ptr, void* privdata) {
  std::unique_ptr<Pending> pending(static_cast<Pending*>(privdata));
  AsyncShard* self = pending->shard;
  --self->pending_count_;
  if (!self->deadlines_ms_.empty()) {
    self->deadlines_ms_.pop_front();
  }
  auto* reply = static_cast<redisReply*>(reply_ptr);
  if (reply == nullptr) {
    // Dropped after it was handed to hiredis: it may have run.
    count_redis_command_error(self->address_.name());
    pending->callback(Status(
        Code::kUnknown, "redis shard " + self->address_.name() + ": " +
                            (self->last_error_.empty() ? "connection lost" : self->last_error_) +
                            "; outcome unknown"));
    return;
  }
  if (reply->type == REDIS_REPLY_ERROR && !pending->argv.empty()) {
    std::string text(reply->str, reply->len);
    auto redirect = parse_redirect(text);
    if (redirect && !redirect->ask) {
      // The slot has a new owner: this and what follows go there.
      std::string host = redirect->host.empty() ? self->target_host_ : redirect->host;
      if (host != self->target_host_ || redirect->port != self->target_port_) {
        self->move_to(host, redirect->port,
                      "slot moved to " + host + ":" + std::to_string(redirect->port));
      }
      return self->park(std::move(pending), 0);
    }
    if (redirect || is_cluster_retry(text)) {
      // A slot migrating (ASK, TRYAGAIN) or a failover (CLUSTERDOWN): not
      // run; again shortly, on the same node, until the migration ends.
      return self->park(std::move(pending), monotonic_ms() + 50);
    }
  }
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_ARRAY) {
    if (pending->argv.size() > 0 && is_scan(pending->argv)) {
      untag_scan_reply(reply, self->address_.key_tag());
    }
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    std::string text(reply->str, reply->len);
    if (pending->script && is_function_missing(text)) {
      self->call_after_library_load(std::move(pending));
      return;
    }
    count_redis_command_error(self->address_.name());
    if (self->address_.is_sentinel() && is_role_change_refusal(text) && self->up_ &&
        self->context_ != nullptr) {
      // Demoted or restarted: reconnect through the sentinels. The commands
      // already sent get their replies first (hiredis disconnects after them).
      self->mark_down("the node answered " + text.substr(0, text.find(' ')));
      redisAsyncDisconnect(self->context_);
    }
    if (is_state_refusal(text)) {
      // Full, read-only, cannot persist...: refused before anything was
      // written, so callers answer 503 or try another shard.
      pending->callback(refusal_status(self->address_.name(), text));
      return;
    }
    pending->callback(
        Status(Code::kInternal, "redis shard " + self->address_.name() + ": " + text));
    return;
  }
  pending->callback(static_cast<const redisReply*>(reply));
}

}  // namespace dq

// Implements common/redis/sentinel_ask.h. Each attempt has its own hiredis
// async context and a deadline; the context's data points back here and is
// cleared before the context is let go, so hiredis's late callbacks (on
// free or disconnect) find nothing to call.
#include "common/redis/sentinel_ask.h"

#include <utility>

#include "common/redis/redis_argv.h"
#include "common/redis/redis_loop.h"
#include "common/redis/sentinel_lookup.h"

namespace dq {

SentinelAsk::SentinelAsk(event_base* base, ShardAddress shard, int timeout_ms)
    : base_(base), shard_(std::move(shard)), timeout_ms_(timeout_ms) {}

SentinelAsk::~SentinelAsk() {
  done_ = nullptr;
  timer_.reset();
  drop_context();
}

void SentinelAsk::start(size_t first, Done done) {
  if (shard_.sentinels.empty()) {
    done(Status(Code::kUnavailable, "Redis shard " + shard_.name() + " lists no sentinel"));
    return;
  }
  done_ = std::move(done);
  next_ = first % shard_.sentinels.size();
  remaining_ = shard_.sentinels.size();
  said_.clear();
  ask_next();
}

void SentinelAsk::drop_context() {
  if (context_ == nullptr) {
    return;
  }
  redisAsyncContext* context = context_;
  context_ = nullptr;
  context->data = nullptr;
  redisAsyncFree(context);  // deferred by hiredis when inside its callback
}

void SentinelAsk::ask_next() {
  if (remaining_ == 0) {
    Done done = std::move(done_);
    done_ = nullptr;
    done(Status(Code::kUnavailable,
                "Redis shard " + shard_.name() + ": no sentinel names a primary (" + said_ + ")"));
    return;
  }
  --remaining_;
  const HostPort& sentinel = shard_.sentinels[next_];
  next_ = (next_ + 1) % shard_.sentinels.size();
  redisAsyncContext* context = redisAsyncConnect(sentinel.host.c_str(), sentinel.port);
  if (context == nullptr || context->err) {
    std::string why = context ? context->errstr : "out of memory";
    if (context) {
      redisAsyncFree(context);
    }
    finish_attempt(why);
    return;
  }
  context->data = this;
  attach_to_loop(context, base_);
  redisAsyncSetConnectCallback(context, &SentinelAsk::on_connect);
  context_ = context;
  std::string command =
      resp_command({"SENTINEL", "get-master-addr-by-name", shard_.sentinel_master});
  redisAsyncFormattedCommand(context, &SentinelAsk::on_reply, nullptr, command.data(),
                             command.size());
  timer_.reset(evtimer_new(base_, &SentinelAsk::on_timeout, this));
  timeval wait{timeout_ms_ / 1000, static_cast<suseconds_t>(timeout_ms_ % 1000) * 1000};
  evtimer_add(timer_.get(), &wait);
}

// One sentinel did not name a primary: note why and ask the next.
void SentinelAsk::finish_attempt(const std::string& why) {
  timer_.reset();
  drop_context();
  size_t asked = (next_ + shard_.sentinels.size() - 1) % shard_.sentinels.size();
  said_ +=
      (said_.empty() ? "" : "; ") + ("sentinel " + shard_.sentinels[asked].text() + ": " + why);
  ask_next();
}

void SentinelAsk::on_connect(const redisAsyncContext* context, int status) {
  auto* self = static_cast<SentinelAsk*>(context->data);
  if (self == nullptr || status == REDIS_OK) {
    return;
  }
  // hiredis frees this context after the callback (and fails the command,
  // whose callback then finds no data).
  const_cast<redisAsyncContext*>(context)->data = nullptr;
  self->context_ = nullptr;
  self->finish_attempt(context->errstr);
}

void SentinelAsk::on_reply(redisAsyncContext* context, void* reply_ptr, void* /*privdata*/) {
  auto* self = static_cast<SentinelAsk*>(context->data);
  if (self == nullptr) {
    return;
  }
  auto* reply = static_cast<redisReply*>(reply_ptr);
  if (reply == nullptr) {
    self->finish_attempt(context->errstr[0] ? context->errstr : "connection lost");
    return;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    self->finish_attempt(std::string(reply->str, reply->len));
    return;
  }
  auto primary = master_addr_from_reply(reply);
  if (!primary.is_ok()) {
    self->finish_attempt(primary.status().message());
    return;
  }
  self->timer_.reset();
  self->drop_context();
  Done done = std::move(self->done_);
  self->done_ = nullptr;
  done(*primary);
}

void SentinelAsk::on_timeout(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  static_cast<SentinelAsk*>(arg)->finish_attempt("did not answer in time");
}

}  // namespace dq

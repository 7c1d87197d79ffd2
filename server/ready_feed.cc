// The pull topics' ready channel, one subscription per shard (see ready_feed.h).
#include "server/ready_feed.h"

#include "common/core/log.h"
#include "common/redis/redis_loop.h"

namespace dq {
namespace {

constexpr int kReconnectMs = 500;

}  // namespace

ReadyFeed::ReadyFeed(event_base* base, std::vector<AsyncShard*> shards,
                     std::function<void(const std::string& topic)> ready)
    : base_(base), shards_(std::move(shards)), ready_(std::move(ready)) {
  for (size_t shard = 0; shard < shards_.size(); ++shard) {
    auto link = std::make_unique<Link>();
    link->feed = this;
    link->shard = shard;
    links_.push_back(std::move(link));
  }
  tick_.reset(event_new(base_, -1, EV_PERSIST, &ReadyFeed::on_tick, this));
}

ReadyFeed::~ReadyFeed() {
  stopping_ = true;
  for (auto& link : links_) {
    if (link->context != nullptr) {
      redisAsyncContext* context = link->context;
      link->context = nullptr;
      redisAsyncFree(context);  // its callbacks see stopping_
    }
  }
}

void ReadyFeed::start() {
  if (started_) {
    return;
  }
  started_ = true;
  timeval every{0, kReconnectMs * 1000};
  event_add(tick_.get(), &every);
  for (auto& link : links_) {
    connect(link.get());
  }
}

bool ReadyFeed::all_up() const {
  for (const auto& link : links_) {
    if (!link->subscribed) {
      return false;
    }
  }
  return true;
}

void ReadyFeed::on_tick(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* feed = static_cast<ReadyFeed*>(arg);
  for (auto& link : feed->links_) {
    if (link->context == nullptr) {
      feed->connect(link.get());
    }
  }
}

void ReadyFeed::connect(Link* link) {
  if (stopping_ || link->context != nullptr) {
    return;
  }
  const ShardAddress& address = shards_[link->shard]->address();
  if (address.host.empty()) {
    return;  // a Sentinel-managed shard not resolved yet: the next tick
  }
  redisAsyncContext* context = redisAsyncConnect(address.host.c_str(), address.port);
  if (context == nullptr || context->err) {
    if (context != nullptr) {
      redisAsyncFree(context);
    }
    return;
  }
  context->data = link;
  attach_to_loop(context, base_);
  redisAsyncSetConnectCallback(context, &ReadyFeed::on_connect);
  redisAsyncSetDisconnectCallback(context, &ReadyFeed::on_disconnect);
  link->context = context;
  if (!address.password.empty()) {
    const char* argv[] = {"AUTH", address.password.c_str()};
    size_t lengths[] = {4, address.password.size()};
    redisAsyncCommandArgv(context, nullptr, nullptr, 2, argv, lengths);
  }
  // A cluster's virtual shard publishes on its own tag's channel (and a
  // cluster's publishes reach every node).
  std::string channel = address.key_tag() + ":ready";
  const char* argv[] = {"SUBSCRIBE", channel.c_str()};
  size_t lengths[] = {9, channel.size()};
  redisAsyncCommandArgv(context, &ReadyFeed::on_message, link, 2, argv, lengths);
}

void ReadyFeed::on_connect(const redisAsyncContext* context, int status) {
  if (status != REDIS_OK) {
    auto* link = static_cast<Link*>(context->data);
    link->context = nullptr;  // hiredis frees it after this callback; the tick retries
    link->subscribed = false;
  }
}

void ReadyFeed::on_disconnect(const redisAsyncContext* context, int /*status*/) {
  auto* link = static_cast<Link*>(context->data);
  link->context = nullptr;
  if (link->subscribed && !link->feed->stopping_) {
    err_log().warn("pull: the ready channel of shard {} dropped; reconnecting",
                   link->feed->shards_[link->shard]->address().name());
  }
  link->subscribed = false;
}

void ReadyFeed::on_message(redisAsyncContext* /*context*/, void* reply_ptr, void* privdata) {
  auto* link = static_cast<Link*>(privdata);
  auto* reply = static_cast<redisReply*>(reply_ptr);
  if (reply == nullptr || link->feed->stopping_) {
    return;  // the connection is going away
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    err_log().warn("pull: cannot subscribe to the ready channel of shard {}: {}",
                   link->feed->shards_[link->shard]->address().name(),
                   std::string(reply->str, reply->len));
    if (link->context != nullptr) {
      redisAsyncDisconnect(link->context);
    }
    return;
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
      reply->element[0]->type != REDIS_REPLY_STRING) {
    return;
  }
  std::string kind(reply->element[0]->str, reply->element[0]->len);
  if (kind == "subscribe") {
    link->subscribed = true;
    link->feed->ready_("");  // anything published while it was off is looked for
  } else if (kind == "message" && reply->element[2]->type == REDIS_REPLY_STRING) {
    link->feed->ready_(std::string(reply->element[2]->str, reply->element[2]->len));
  }
}

}  // namespace dq

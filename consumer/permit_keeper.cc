// The consumer's permits for capped topics (see permit_keeper.h).
#include "consumer/permit_keeper.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/registry/topic_caps.h"
#include "common/store/coordination_shard.h"
#include "common/store/keys.h"
#include "common/store/lua_scripts.h"

namespace dq {
namespace {

constexpr int64_t kPermitTickMs = 100;  // longest sleep: stale permits and stops are seen
constexpr int64_t kFullRetryMs = 250;   // longest wait before asking a full topic again
constexpr int64_t kErrorRetryMs = 500;  // the coordination shard did not answer
constexpr int kMostPerTake = 1000;
constexpr int64_t kReleaseLingerMs = 5;  // longest an ended call's permit waits to go back
constexpr size_t kReleaseBatch = 64;     // ... or until this many wait

void count(const std::string& topic, const char* what, uint64_t n) {
  if (n > 0) {
    SharedMetrics::instance().add(SharedMetrics::key({"permit", topic, what}), n);
  }
}

}  // namespace

PermitKeeper::PermitKeeper(const Config& config, CURLM* multi)
    : config_(config), multi_(multi), errors_(spdlog::level::warn) {
  std::random_device random;
  char text[64];
  std::snprintf(text, sizeof(text), "%d/%08x/", static_cast<int>(getpid()), random());
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  id_prefix_ = std::string(host) + "/" + text;
  for (const auto& shard : config.shards) {
    shards_.emplace_back(shard, config.redis_connect_timeout_ms, config.redis_command_timeout_ms);
  }
  thread_ = std::thread([this] { run(); });
}

PermitKeeper::~PermitKeeper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  thread_.join();
}

void PermitKeeper::want(const Topic& topic, int unused) {
  std::lock_guard<std::mutex> lock(mutex_);
  TopicPermits& permits = topics_[topic.name];
  permits.caps = topic;
  permits.wanted = std::max(0, unused);
  if (permits.unused.size() > static_cast<size_t>(permits.wanted)) {
    give_back_unused(permits, static_cast<size_t>(permits.wanted));
    changed_.notify_all();
  } else if (permits.unused.size() < static_cast<size_t>(permits.wanted) &&
             permits.next_try_ms <= monotonic_ms()) {
    changed_.notify_all();
  }
}

int PermitKeeper::available(const std::string& topic) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = topics_.find(topic);
  return it == topics_.end() ? 0 : static_cast<int>(it->second.unused.size());
}

std::vector<Permit> PermitKeeper::take(const std::string& topic, int most) {
  std::vector<Permit> taken;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    return taken;
  }
  auto& unused = it->second.unused;
  while (!unused.empty() && static_cast<int>(taken.size()) < most) {
    taken.push_back(std::move(unused.front()));
    unused.pop_front();
  }
  return taken;
}

void PermitKeeper::put_back(const std::string& topic, std::vector<Permit> permits) {
  if (permits.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto& unused = topics_[topic].unused;
  // Oldest first, as expire_unused expects.
  unused.insert(unused.begin(), std::make_move_iterator(permits.begin()),
                std::make_move_iterator(permits.end()));
  std::sort(unused.begin(), unused.end(),
            [](const Permit& a, const Permit& b) { return a.taken_ms < b.taken_ms; });
  changed_.notify_all();
}

void PermitKeeper::give_back(const std::string& topic, Permit permit) {
  std::lock_guard<std::mutex> lock(mutex_);
  TopicPermits& permits = topics_[topic];
  if (permit.id.empty()) {
    count(topic, "returned", 1);  // a rate share: nothing to give back
    return;
  }
  int64_t now = monotonic_ms();
  if (permits.caps.max_rate == 0 && static_cast<int>(permits.unused.size()) < permits.wanted &&
      now - permit.taken_ms < most_age_ms()) {
    // Kept with its taken_ms; the call's end already makes the loop plan again.
    permits.unused.push_back(std::move(permit));
    return;
  }
  count(topic, "returned", 1);
  if (permits.ended.empty()) {
    permits.first_ended_ms = now;
  }
  permits.ended.push_back(std::move(permit.id));
  permits.next_try_ms = 0;  // a call of ours ended: room under max_in_flight, maybe
  changed_.notify_all();
}

bool PermitKeeper::arrived() {
  std::lock_guard<std::mutex> lock(mutex_);
  bool was = arrived_;
  arrived_ = false;
  return was;
}

int64_t PermitKeeper::most_age_ms() const { return std::max(1, config_.lease_margin_ms / 2); }

void PermitKeeper::expire_unused(TopicPermits& permits, int64_t now) {
  const int64_t most_age = most_age_ms();
  for (auto it = permits.unused.begin(); it != permits.unused.end();) {
    if (now - it->taken_ms < most_age) {
      ++it;
      continue;
    }
    if (!it->id.empty()) {
      permits.unneeded.push_back(std::move(it->id));
    }
    if (permits.caps.max_rate > 0) {
      ++permits.refund;
    }
    count(permits.caps.name, "returned", 1);
    it = permits.unused.erase(it);
  }
}

void PermitKeeper::give_back_unused(TopicPermits& permits, size_t keep) {
  while (permits.unused.size() > keep) {
    Permit held = std::move(permits.unused.front());
    permits.unused.pop_front();
    if (!held.id.empty()) {
      permits.unneeded.push_back(std::move(held.id));
    }
    if (permits.caps.max_rate > 0) {
      ++permits.refund;
    }
    count(permits.caps.name, "returned", 1);
  }
}

RedisConnection& PermitKeeper::connection_for(const std::string& topic) {
  return shards_[coordination_shard(config_.shards, topic)];
}

void PermitKeeper::release(const std::string& topic, TopicPermits& permits,
                           std::unique_lock<std::mutex>& lock) {
  ScriptCall call;
  call.script = &kPermitReleaseScript;
  call.keys = {keys::permits(topic), keys::rate(topic)};
  call.args = {std::to_string(permits.caps.max_rate), std::to_string(permits.refund)};
  for (auto& id : permits.ended) {
    call.args.push_back(std::move(id));
  }
  for (auto& id : permits.unneeded) {
    call.args.push_back(std::move(id));
  }
  permits.ended.clear();
  permits.unneeded.clear();
  permits.refund = 0;
  lock.unlock();
  auto reply = connection_for(topic).run(call);
  lock.lock();
  if (!reply.is_ok()) {
    // Not given back: the permits end with their lease.
    errors_.note("consumer: cannot give back permits of topic " + topic + ": " +
                 reply.status().message());
  }
}

void PermitKeeper::acquire(const std::string& topic, TopicPermits& permits, int64_t now,
                           std::unique_lock<std::mutex>& lock) {
  const Topic caps = permits.caps;
  int n = std::min(kMostPerTake, permits.wanted - static_cast<int>(permits.unused.size()));
  uint64_t first = seq_;
  seq_ += static_cast<uint64_t>(n);
  ScriptCall call;
  call.script = &kPermitTakeScript;
  call.keys = {keys::permits(topic), keys::rate(topic)};
  call.args = {id_prefix_,
               std::to_string(first),
               std::to_string(n),
               std::to_string(caps.max_in_flight),
               std::to_string(int64_t{caps.timeout_ms} + config_.lease_margin_ms),
               std::to_string(caps.max_rate),
               std::to_string(effective_burst(caps))};
  lock.unlock();
  auto reply = connection_for(topic).run(call);
  lock.lock();
  const redisReply* r = reply.is_ok() ? reply->get() : nullptr;
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER) {
    // The topic's calls pause until its coordination shard answers; a take
    // whose answer was lost ends with its lease.
    errors_.note("consumer: cannot take permits of topic " + topic + " (the topic waits): " +
                 (reply.is_ok() ? std::string("unexpected reply") : reply.status().message()));
    permits.next_try_ms = now + kErrorRetryMs;
    return;
  }
  errors_.clear();
  int taken = static_cast<int>(r->element[0]->integer);
  int64_t wait = r->element[1]->integer;
  for (int i = 0; i < taken; ++i) {
    std::string id = caps.max_in_flight > 0 ? id_prefix_ + std::to_string(first + i) : "";
    permits.unused.push_back({std::move(id), now});
  }
  count(topic, "taken", static_cast<uint64_t>(taken));
  if (taken < n) {
    count(topic, "waits", 1);
    permits.next_try_ms = now + std::clamp<int64_t>(wait, 1, kFullRetryMs);
  } else {
    permits.next_try_ms = 0;
  }
  if (taken > 0) {
    arrived_ = true;
    curl_multi_wakeup(multi_);
  }
}

void PermitKeeper::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    int64_t now = monotonic_ms();
    int64_t wake = now + kPermitTickMs;
    bool work = false;
    for (auto& [name, permits] : topics_) {
      if (!permits.unneeded.empty() || permits.refund > 0 ||
          permits.ended.size() >= kReleaseBatch) {
        work = true;
      } else if (!permits.ended.empty()) {
        wake = std::min(wake, permits.first_ended_ms + kReleaseLingerMs);
      }
      if (static_cast<int>(permits.unused.size()) < permits.wanted) {
        wake = std::min(wake, permits.next_try_ms);
      }
    }
    if (!work && !stopping_ && wake > now) {
      changed_.wait_for(lock, std::chrono::milliseconds(wake - now));
    }
    now = monotonic_ms();
    for (auto& [name, permits] : topics_) {
      if (stopping_) {
        give_back_unused(permits, 0);
      } else {
        expire_unused(permits, now);
      }
      // Ended calls' permits go back in batches: a few ms later, one call.
      bool pending = !permits.ended.empty() || !permits.unneeded.empty() || permits.refund > 0;
      if (pending && (stopping_ || !permits.unneeded.empty() || permits.refund > 0 ||
                      permits.ended.size() >= kReleaseBatch ||
                      now - permits.first_ended_ms >= kReleaseLingerMs)) {
        release(name, permits, lock);
      }
      if (!stopping_ && static_cast<int>(permits.unused.size()) < permits.wanted &&
          permits.next_try_ms <= now) {
        acquire(name, permits, now, lock);
      }
    }
    if (stopping_) {
      return;
    }
  }
}

}  // namespace dq

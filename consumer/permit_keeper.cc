// The consumer's permits for capped topics (see permit_keeper.h).
#include "consumer/permit_keeper.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <random>

#include "common/core/clock.h"
#include "common/core/host_name.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/registry/topic_caps.h"
#include "common/store/coordination_shard.h"
#include "common/store/keys.h"
#include "common/store/lua_scripts.h"

namespace dq {
namespace {

constexpr int64_t kPermitTickMs = 100;   // longest sleep: stale permits and stops are seen
constexpr int64_t kFullRetryMs = 250;    // longest wait before asking a full topic again
constexpr int64_t kErrorRetryMs = 500;   // the coordination shard did not answer
constexpr int64_t kReleaseLingerMs = 5;  // near the caps: what is not wanted goes back this soon
constexpr int64_t kIdleReleaseMs = 100;  // far from them: once nothing was wanted this long
constexpr int64_t kRenewMs = 1000;       // a lease in use is renewed at least this often
constexpr int64_t kNever = INT64_MAX;

void count(const std::string& topic, const char* what, uint64_t n) {
  if (n > 0) {
    SharedMetrics::instance().add(SharedMetrics::key({"permit", topic, what}), n);
  }
}

// Taken and returned count max_in_flight permits (the lease's count) on
// topics with that cap, else rate shares.
void count_change(const std::string& topic, int before, int after) {
  if (after > before) {
    count(topic, "taken", static_cast<uint64_t>(after - before));
  } else if (before > after) {
    count(topic, "returned", static_cast<uint64_t>(before - after));
  }
}

}  // namespace

PermitKeeper::PermitKeeper(const Config& config, event_base* base, std::vector<AsyncShard*> shards,
                           std::function<void()> arrived)
    : config_(config),
      shards_(std::move(shards)),
      arrived_(std::move(arrived)),
      errors_(spdlog::level::warn) {
  std::random_device random;
  char text[64];
  std::snprintf(text, sizeof(text), "%d/%08x", static_cast<int>(getpid()), random());
  holder_ = host_name() + "/" + text;
  timer_.reset(evtimer_new(base, &PermitKeeper::on_timer, this));
}

void PermitKeeper::want(const Topic& topic, int unused, int ahead) {
  TopicPermits& permits = topics_[topic.name];
  permits.caps = topic;
  permits.wanted = std::max(0, unused);
  permits.ahead = std::max(permits.wanted, ahead);
  int64_t now = monotonic_ms();
  if (permits.wanted > 0) {
    permits.idle_ms = -1;
  } else if (permits.idle_ms < 0) {
    permits.idle_ms = now;
  }
  wake_by(due_ms(permits, now));
}

int PermitKeeper::available(const std::string& topic) {
  auto it = topics_.find(topic);
  return it == topics_.end() ? 0 : on_hand(it->second, monotonic_ms());
}

PermitBatch PermitKeeper::take(const std::string& topic, int most) {
  PermitBatch batch;
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    return batch;
  }
  TopicPermits& permits = it->second;
  int64_t now = monotonic_ms();
  batch.count = std::min(most, on_hand(permits, now));
  if (batch.count <= 0) {
    batch.count = 0;
    return batch;
  }
  batch.shares_taken_ms = now;
  permits.used += batch.count;
  if (permits.caps.max_rate > 0) {
    int left = batch.count;
    while (left > 0 && !permits.shares.empty()) {
      auto& oldest = permits.shares.front();
      batch.shares_taken_ms = std::min(batch.shares_taken_ms, oldest.first);
      int n = std::min(left, oldest.second);
      oldest.second -= n;
      left -= n;
      permits.share_count -= n;
      if (oldest.second == 0) {
        permits.shares.pop_front();
      }
    }
  }
  return batch;
}

void PermitKeeper::put_back(const std::string& topic, PermitBatch batch) {
  if (batch.count <= 0) {
    return;
  }
  TopicPermits& permits = topics_[topic];
  permits.used = std::max(0, permits.used - batch.count);
  if (permits.caps.max_rate > 0) {
    permits.shares.emplace_front(batch.shares_taken_ms, batch.count);
    permits.share_count += batch.count;
  }
  wake_by(due_ms(permits, monotonic_ms()));
}

void PermitKeeper::give_back(const std::string& topic) {
  TopicPermits& permits = topics_[topic];
  permits.used = std::max(0, permits.used - 1);
  if (permits.caps.max_in_flight == 0) {
    count(topic, "returned", 1);  // a rate share, used
  }
  wake_by(due_ms(permits, monotonic_ms()));
}

void PermitKeeper::stop() {
  stopping_ = true;
  wake_by(monotonic_ms());
}

bool PermitKeeper::settled() const {
  for (const auto& [name, permits] : topics_) {
    if (permits.asking || permits.held > 0 || permits.share_count > 0) {
      return false;
    }
  }
  return true;
}

void PermitKeeper::wake_by(int64_t at_ms) {
  if (at_ms == kNever || (wake_ms_ != 0 && wake_ms_ <= at_ms)) {
    return;
  }
  wake_ms_ = at_ms;
  int64_t wait = std::max<int64_t>(0, at_ms - monotonic_ms());
  timeval after{static_cast<time_t>(wait / 1000), static_cast<suseconds_t>((wait % 1000) * 1000)};
  evtimer_add(timer_.get(), &after);
}

void PermitKeeper::on_timer(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  auto* keeper = static_cast<PermitKeeper*>(self);
  keeper->wake_ms_ = 0;
  keeper->run();
}

int64_t PermitKeeper::most_age_ms() const { return std::max(1, config_.lease_margin_ms / 2); }

bool PermitKeeper::fresh(const TopicPermits& permits, int64_t now) const {
  return permits.leased && now - permits.lease_sent_ms < most_age_ms();
}

int PermitKeeper::on_hand(const TopicPermits& permits, int64_t now) const {
  if (!has_caps(permits.caps)) {
    return 0;
  }
  int n = INT_MAX;
  if (permits.caps.max_in_flight > 0) {
    n = fresh(permits, now) ? std::max(0, permits.held - permits.used) : 0;
  }
  if (permits.caps.max_rate > 0) {
    n = std::min(n, permits.share_count);
  }
  return n;
}

int64_t PermitKeeper::due_ms(TopicPermits& permits, int64_t now) {
  const Topic& caps = permits.caps;
  const bool in_flight = caps.max_in_flight > 0;
  const bool rate = caps.max_rate > 0;
  const int hand = permits.held - permits.used;
  int64_t at = kNever;
  // More on hand than wanted goes back: near the caps within a few ms (other
  // consumers may be waiting), far from them once the topic is idle.
  bool surplus = (in_flight ? hand > permits.wanted : permits.held > 0) ||
                 (rate ? permits.share_count > permits.wanted : permits.share_count > 0);
  if (surplus) {
    if (permits.surplus_ms < 0) {
      permits.surplus_ms = now;
    }
    if (!permits.far || !has_caps(caps)) {
      at = permits.surplus_ms + kReleaseLingerMs;
    } else if (permits.wanted == 0) {
      at = std::max(permits.surplus_ms, permits.idle_ms) + kIdleReleaseMs;
    }
  } else {
    permits.surplus_ms = -1;
  }
  if (permits.wanted > 0) {
    // Short of permits: far from the caps shares are topped up at half.
    bool short_in_flight = in_flight && (!fresh(permits, now) || hand < permits.wanted);
    bool short_rate = rate && (permits.far ? permits.share_count * 2 <= permits.wanted
                                           : permits.share_count < permits.wanted);
    if (short_in_flight || short_rate) {
      at = now;
    } else if (in_flight && hand > 0) {
      // In use: renewed well before a permit on hand gets too old to start a call.
      at = std::min(at, permits.lease_sent_ms + std::min(kRenewMs, most_age_ms() / 2));
    }
  }
  // Shares not used for long are refunded.
  for (const auto& [taken_ms, n] : permits.shares) {
    at = std::min(at, taken_ms + most_age_ms());
  }
  return at == kNever ? kNever : std::max(at, permits.next_try_ms);
}

AsyncShard* PermitKeeper::connection_for(const std::string& topic) {
  return shards_[coordination_shard(config_.shards, topic)];
}

void PermitKeeper::sync(const std::string& topic, TopicPermits& permits) {
  int64_t now = monotonic_ms();
  const Topic caps = permits.caps;
  const bool in_flight = caps.max_in_flight > 0;
  const int wanted = stopping_ || !has_caps(caps) ? 0 : permits.wanted;
  const int ahead = wanted > 0 ? permits.ahead : 0;
  // Shares kept on hand; old ones and those not wanted are refunded.
  const int keep = caps.max_rate == 0 ? 0 : (permits.far && wanted > 0 ? 2 * ahead : wanted);
  int refund = 0;
  for (auto it = permits.shares.begin(); it != permits.shares.end();) {
    if (now - it->first >= most_age_ms()) {
      refund += it->second;
      permits.share_count -= it->second;
      it = permits.shares.erase(it);
    } else {
      ++it;
    }
  }
  while (permits.share_count > keep && !permits.shares.empty()) {
    auto& oldest = permits.shares.front();
    int n = std::min(oldest.second, permits.share_count - keep);
    oldest.second -= n;
    permits.share_count -= n;
    refund += n;
    if (oldest.second == 0) {
      permits.shares.pop_front();
    }
  }
  if (!in_flight) {
    count(topic, "returned", static_cast<uint64_t>(refund));
  }
  // While the call is out the lease may come back as low as the calls open
  // plus what is wanted: no more than that is used meanwhile.
  const int open = permits.used;
  int before = permits.held;
  permits.held = std::min(permits.held, open + wanted);
  count_change(topic, before, permits.held);
  ScriptCall call;
  call.script = &kPermitLeaseScript;
  call.keys = {keys::permit_leases(topic), keys::permit_deadlines(topic), keys::rate(topic)};
  call.args = {holder_,
               std::to_string(++seq_),
               std::to_string(open),
               std::to_string(wanted),
               std::to_string(ahead),
               std::to_string(caps.max_in_flight),
               std::to_string(int64_t{caps.timeout_ms} + config_.lease_margin_ms),
               std::to_string(caps.max_rate),
               std::to_string(effective_burst(caps)),
               std::to_string(permits.share_count),
               std::to_string(refund),
               std::to_string(2 * ahead)};
  permits.asking = true;
  connection_for(topic)->run(std::move(call),
                             [this, topic, sent = now](Result<const redisReply*> reply) {
                               answered(topic, sent, std::move(reply));
                             });
}

void PermitKeeper::answered(const std::string& topic, int64_t sent,
                            Result<const redisReply*> reply) {
  TopicPermits& permits = topics_[topic];
  permits.asking = false;
  const bool in_flight = permits.caps.max_in_flight > 0;
  int64_t now = monotonic_ms();
  permits.surplus_ms = -1;
  const redisReply* r = reply.is_ok() ? *reply : nullptr;
  bool well_formed = r && r->type == REDIS_REPLY_ARRAY && r->elements == 4;
  for (size_t i = 0; well_formed && i < 4; ++i) {
    well_formed = r->element[i]->type == REDIS_REPLY_INTEGER;
  }
  if (!well_formed) {
    // The lease may now count more or fewer: until an answer says, no
    // permit on hand is used (calls open are covered by the lease they
    // started under). The topic's calls pause until the shard answers; what
    // a lost answer gave ends with its lease.
    errors_.note("consumer: cannot take permits of topic " + topic + " (the topic waits): " +
                 (reply.is_ok() ? std::string("unexpected reply") : reply.status().message()));
    int before = permits.held;
    permits.held = std::min(permits.held, permits.used);
    count_change(topic, before, permits.held);
    permits.next_try_ms = now + kErrorRetryMs;
    if (stopping_) {
      // Nothing more is asked at a stop: what the lease counts ends with it.
      permits.held = 0;
      permits.shares.clear();
      permits.share_count = 0;
    }
    wake_by(due_ms(permits, now));
    return;
  }
  errors_.clear();
  int held = in_flight ? static_cast<int>(r->element[0]->integer) : 0;
  int shares = static_cast<int>(r->element[1]->integer);
  int64_t wait = r->element[2]->integer;
  permits.far = r->element[3]->integer == 1;
  bool more = held > permits.held || shares > 0;
  count_change(topic, permits.held, held);
  permits.held = held;
  if (held > 0) {
    permits.lease_sent_ms = sent;
    permits.leased = true;
  }
  if (shares > 0) {
    permits.shares.emplace_back(now, shares);
    permits.share_count += shares;
    if (!in_flight) {
      count(topic, "taken", static_cast<uint64_t>(shares));
    }
  }
  if (wait > 0 && on_hand(permits, now) < permits.wanted) {
    count(topic, "waits", 1);
    permits.next_try_ms = now + std::clamp<int64_t>(wait, 1, kFullRetryMs);
  } else {
    permits.next_try_ms = 0;
  }
  wake_by(stopping_ && (permits.held > 0 || permits.share_count > 0) ? now : due_ms(permits, now));
  if (more && on_hand(permits, now) > 0) {
    arrived_();
  }
}

void PermitKeeper::run() {
  int64_t now = monotonic_ms();
  for (auto& [name, permits] : topics_) {
    if (permits.asking) {
      continue;
    }
    if (stopping_ ? permits.held > 0 || permits.share_count > 0 : due_ms(permits, now) <= now) {
      sync(name, permits);
    }
  }
  // Stale permits are seen within a tick even when nothing else is due.
  int64_t next = now + kPermitTickMs;
  for (auto& [name, permits] : topics_) {
    if (!permits.asking) {
      next = std::min(next, std::max(now + 1, due_ms(permits, now)));
    }
  }
  if (!stopping_ && !topics_.empty()) {
    wake_by(next);
  }
}

}  // namespace dq

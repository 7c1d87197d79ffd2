// Per-shard BLPOPs that wake the consumer's loop (see wake_waiter.h).
#include "consumer/wake_waiter.h"

#include "common/core/log.h"

namespace dq {
namespace {

constexpr int kBlockMs = 1000;  // longest BLPOP; a stop is seen within it
constexpr int kRetryMs = 500;   // after an error (down, or refused at once)

}  // namespace

WakeWaiter::WakeWaiter(const Config& config, event_base* base, AsyncJobStore& store,
                       std::function<void()> woke)
    : config_(config), store_(store), woke_(std::move(woke)) {
  for (size_t index = 0; index < config.shards.size(); ++index) {
    auto shard = std::make_unique<Shard>();
    shard->owner = this;
    shard->index = index;
    shard->pause.reset(evtimer_new(base, &WakeWaiter::on_pause_over, shard.get()));
    shards_.push_back(std::move(shard));
  }
  for (auto& shard : shards_) {
    wait(*shard);
  }
}

bool WakeWaiter::take(size_t index) {
  Shard& shard = *shards_[index];
  if (!shard.pending) {
    return false;
  }
  shard.pending = false;
  wait(shard);
  return true;
}

void WakeWaiter::wait(Shard& shard) {
  if (stopping_ || shard.pending || shard.waiting) {
    return;
  }
  shard.waiting = true;
  store_.wait_wake(shard.index, WakeList::kConsumer, kBlockMs, [this, &shard](Result<bool> woken) {
    shard.waiting = false;
    if (!woken.is_ok()) {
      // Down, or refused at once (a read-only or full shard): pause, so this
      // does not spin; logged once, then with a count.
      shard.refused.note("consumer: wake wait on shard " + config_.shards[shard.index].name() +
                         ": " + woken.status().message());
      shard.waiting = true;
      timeval after{0, static_cast<suseconds_t>(kRetryMs) * 1000};
      evtimer_add(shard.pause.get(), &after);
      return;
    }
    shard.refused.clear();
    if (*woken) {
      shard.pending = true;
      woke_();
      return;
    }
    wait(shard);
  });
}

void WakeWaiter::on_pause_over(evutil_socket_t /*fd*/, short /*events*/, void* arg) {
  auto* shard = static_cast<Shard*>(arg);
  shard->waiting = false;
  shard->owner->wait(*shard);
}

}  // namespace dq

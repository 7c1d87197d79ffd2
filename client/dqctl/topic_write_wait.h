// Runs one topic write of common/registry/topic_writes.h (or of a schedule:
// common/registry/schedule_writes.h) and waits for it: on a loop of its own,
// with connections to the shards only when the write needs them (the shared
// registry, a delete's job count). For `dqctl topic` and `dqctl schedule`.
#pragma once

#include <functional>
#include <utility>

#include "common/core/config.h"
#include "common/core/loop_waiter.h"
#include "common/registry/registry.h"
#include "common/registry/topic_writes.h"
#include "common/store/waiting_shards.h"

namespace dq::ctl {

template <typename T>
T wait_for_topic_write(
    const Config& config, Registry& registry, bool needs_shards,
    const std::function<void(const TopicWriteContext&, std::function<void(T)>)>& start) {
  if (needs_shards || config.shared_registry) {
    WaitingShards shards(config);
    TopicWriteContext context{&registry, &config, &shards.set()};
    return shards.wait<T>([&](std::function<void(T)> done) { start(context, std::move(done)); });
  }
  LoopWaiter waiter;
  TopicWriteContext context{&registry, &config, nullptr};
  return waiter.wait<T>([&](std::function<void(T)> done) { start(context, std::move(done)); });
}

}  // namespace dq::ctl

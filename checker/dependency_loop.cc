// Implements the releaser of waiting jobs (see dependency_loop.h).
#include "checker/dependency_loop.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/repeat_log.h"
#include "common/core/stop_flag.h"
#include "common/registry/topic_cache.h"
#include "common/store/end_memory.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "common/store/placement.h"

namespace dq {
namespace {

constexpr int kEventsPerClaim = 20;
constexpr int64_t kEventLeaseMs = 30000;  // outlives one event's handling
constexpr int kWakeWaitMs = 500;          // the longest a new event waits unseen
// Each call's timeout: short, so a hung shard never holds the checker past
// its stop deadline. A call that timed out may have run: every step is
// idempotent, and the event stays until settled.
constexpr int kRedisTimeoutMs = 750;
// A waiter not found on any shard may be an add still on its way (it
// registers first, then adds itself): its event is tried again each second
// for this long after the job ended, then the registration is dropped (the
// add failed, or the waiter was deleted).
constexpr int64_t kMissingGraceMs = 60000;
constexpr int64_t kEventRetryMs = 1000;
constexpr int64_t kExpireEveryMs = 1000;
constexpr int kExpirePerCall = 200;

}  // namespace

DependencyLoop::DependencyLoop(const Config& config, size_t shard)
    : config_(config), shard_(shard) {
  for (const auto& address : config.shards) {
    shards_.push_back(std::make_unique<RedisConnection>(
        address, std::min(config.redis_connect_timeout_ms, kRedisTimeoutMs),
        std::min(config.redis_command_timeout_ms, kRedisTimeoutMs)));
  }
  wake_ = std::make_unique<RedisConnection>(
      config.shards[shard], std::min(config.redis_connect_timeout_ms, kRedisTimeoutMs),
      std::min(config.redis_command_timeout_ms, kRedisTimeoutMs));
}

void DependencyLoop::run() {
  TopicCache topics(config_.sqlite_path);
  topics_ = &topics;
  RepeatLog outage(spdlog::level::warn);
  int64_t next_expiry = 0;
  RedisConnection& own = *shards_[shard_];
  while (!stop_requested()) {
    topics.refresh_if_older(config_.registry_refresh_ms);
    if (monotonic_ms() >= next_expiry) {
      expire_waiting_jobs();
      next_expiry = monotonic_ms() + kExpireEveryMs;
    }
    // A plain count first: an idle shard costs no script call.
    auto pending = pending_dep_events(own);
    if (pending.is_ok() && *pending == 0) {
      outage.clear();
      if (!stop_requested()) {
        (void)wait_dep_wake(*wake_, kWakeWaitMs);
      }
      continue;
    }
    if (stop_requested()) {
      return;
    }
    auto claimed = claim_dep_events(own, kEventsPerClaim, kEventLeaseMs);
    if (!claimed.is_ok()) {
      outage.note("checker: waiting jobs of shard " + own.address().name() +
                  " wait: " + claimed.status().message());
      std::this_thread::sleep_for(std::chrono::milliseconds(kWakeWaitMs / 2));
      continue;
    }
    if (outage.clear()) {
      err_log().info("checker: waiting jobs of shard {} are released again", own.address().name());
    }
    for (const DepEvent& event : claimed->events) {
      if (stop_requested()) {
        return;
      }
      handle(event, claimed->redis_now_ms);
    }
    if (claimed->events.size() == static_cast<size_t>(kEventsPerClaim)) {
      continue;  // more may be due
    }
    // Until an ending script pushes a token, or kWakeWaitMs passes (events
    // retried later, another checker's lease that ran out).
    if (!stop_requested() && !wait_dep_wake(*wake_, kWakeWaitMs).is_ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kWakeWaitMs / 4));
    }
  }
}

void DependencyLoop::handle(const DepEvent& event, int64_t redis_now_ms) {
  std::vector<std::string> handled;
  bool retry = false;
  for (const std::string& waiter : event.waiters) {
    auto outcome = release(event, waiter);
    if (!outcome.is_ok()) {
      err_log().warn("checker: releasing {} after {} ended: {}; retried", waiter, event.key,
                     outcome.status().message());
      retry = true;
      continue;
    }
    if (*outcome == "moving") {
      retry = true;  // being moved to its home shard: asked again, where it is then
      continue;
    }
    if (*outcome == "missing" && redis_now_ms - event.ended_at_ms < kMissingGraceMs) {
      retry = true;  // its add may still be on its way
      continue;
    }
    handled.push_back(waiter);
  }
  Status settled = settle_dep_event(*shards_[shard_], event, handled, retry ? kEventRetryMs : -1);
  if (!settled.is_ok()) {
    err_log().warn("checker: settling the dependency event of {}: {}; it is handled again",
                   event.key, settled.message());
  }
}

Result<std::string> DependencyLoop::release(const DepEvent& event, const std::string& waiter) {
  std::string topic, id;
  if (!split_job_key(waiter, &topic, &id)) {
    return std::string("done");
  }
  WaiterPolicy policy;
  if (const Topic* known = topics_->find(topic)) {
    policy.release_on_dead = known->on_dependency_dead == "release";
    policy.dead_callback = !known->dead_callback.empty();
    policy.end_memory = end_memory_of(*known).arg();
  }
  // Its previous home first while its home changes: a waiting job being
  // moved answers 'moving' there until its move ended, so a copy the mover
  // wrote on its home is never released while the move may be redone.
  // Then every other shard (it may sit anywhere a past change left it).
  std::vector<size_t> order;
  if (auto homes = id_homes(config_.shards, roles_of(config_), waiter)) {
    order = homes->lookup_order();
  }
  for (size_t i = 0; i < shards_.size(); ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end()) {
      order.push_back(i);
    }
  }
  for (size_t index : order) {
    auto outcome = release_waiter(*shards_[index], event, waiter, policy);
    if (!outcome.is_ok()) {
      return outcome.status();
    }
    if (*outcome != "missing") {
      return outcome;
    }
  }
  return std::string("missing");
}

void DependencyLoop::expire_waiting_jobs() {
  // A plain count first: no script call while nothing waits with an expiry.
  auto reply = shards_[shard_]->command({"ZCARD", keys::waiting_expiry()});
  if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_INTEGER || (*reply)->integer == 0) {
    return;
  }
  std::vector<std::string> memories;
  for (const auto& [name, topic] : topics_->all()) {
    memories.push_back(name);
    memories.push_back(end_memory_of(topic).arg());
  }
  auto ended =
      expire_waiting(*shards_[shard_], kExpirePerCall, end_memory_of(Topic{}).arg(), memories);
  if (ended.is_ok() && *ended > 0) {
    err_log().info("checker: {} waiting job(s) of shard {} expired", *ended,
                   shards_[shard_]->address().name());
  }
}

}  // namespace dq

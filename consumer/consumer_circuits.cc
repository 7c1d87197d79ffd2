// ConsumerLoop's part of circuit breaking per endpoint and receiver
// (consumer/circuit_keeper.h): which circuits to watch, the topics a
// reserve may list while some circuit is not closed, and planning again
// when a circuit changes.
#include <algorithm>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/registry/receiver.h"
#include "common/store/script_calls.h"
#include "consumer/circuit_keeper.h"
#include "consumer/consumer_loop.h"

namespace dq {
namespace {

constexpr int kHeldSweepLimit = 200;  // ready jobs looked at per topic and shard per sweep

}  // namespace

void ConsumerLoop::circuits_changed() {
  // A circuit changed: topics it stopped may take jobs again (or not).
  for (auto& state : shards_) {
    state.maybe_ready = true;
  }
  ++changes_;
  plan_soon();
}

const ConsumerLoop::CircuitNames& ConsumerLoop::circuits_of(const Topic& topic) {
  auto it = receivers_.find(topic.callback_url);
  if (it != receivers_.end()) {
    return it->second;
  }
  if (receivers_.size() >= 4096) {
    receivers_.clear();  // topics come and go
  }
  CircuitNames names{callback_receiver(topic.callback_url), callback_endpoint(topic.callback_url)};
  return receivers_.emplace(topic.callback_url, std::move(names)).first->second;
}

void ConsumerLoop::expire_held() {
  if (!circuits_->any_open()) {
    return;
  }
  std::vector<AsyncShard*> connections = store_.connections();
  for (const Topic& topic : online_topics()) {
    const CircuitNames& names = circuits_of(topic);
    if (!topic.circuit_breaker || names.receiver.empty() || topic.max_retry_duration_s <= 0) {
      continue;
    }
    std::string reason =
        circuits_->held_reason(names.endpoint, names.receiver, topic.circuit_failures);
    if (reason.empty()) {
      continue;
    }
    for (AsyncShard* shard : connections) {
      if (shard == nullptr) {
        continue;
      }
      ++held_sweeps_;
      shard->run(
          expire_held_call(topic.name, topic.max_retry_duration_s * 1000, reason,
                           !topic.dead_callback.empty(), end_memory_of(topic), kHeldSweepLimit),
          [this, name = topic.name](Result<const redisReply*> reply) {
            --held_sweeps_;
            if (reply.is_ok() && (*reply)->type == REDIS_REPLY_INTEGER && (*reply)->integer > 0) {
              err_log().warn("consumer: {} held job(s) of {} dead: max_retry_duration_s",
                             (*reply)->integer, name);
            }
          });
    }
  }
}

void ConsumerLoop::watch_receivers() {
  std::map<std::string, int64_t> lease_ms;
  for (const Topic& topic : online_) {
    const CircuitNames& names = circuits_of(topic);
    if (topic.circuit_breaker && !names.receiver.empty()) {
      int64_t lease = topic.timeout_ms + config_.lease_margin_ms;
      lease_ms[names.receiver] = std::max(lease_ms[names.receiver], lease);
      lease_ms[names.endpoint] = std::max(lease_ms[names.endpoint], lease);
    }
  }
  circuits_->watch(std::move(lease_ms));
}

const std::vector<Topic>& ConsumerLoop::reservable_topics(
    std::vector<Topic>* scratch, std::map<std::string, std::string>* probing,
    std::map<std::string, int>* room) {
  const std::vector<Topic>& online = online_topics();
  probing->clear();
  room->clear();
  if (!circuits_->any_open()) {
    return online;
  }
  scratch->clear();
  for (const Topic& topic : online) {
    const CircuitNames& names = circuits_of(topic);
    if (!topic.circuit_breaker || names.receiver.empty()) {
      scratch->push_back(topic);
      continue;
    }
    // The receiver's circuit decides while it stops the topic (a dead host),
    // else the endpoint's: one circuit at a time, so a probe needs one lease
    // (two held by two processes would stop both). A Retry-After pause of
    // the endpoint holds it either way.
    const Circuit* endpoint = circuits_->view(names.endpoint);
    if (endpoint != nullptr && circuit_paused(*endpoint, now_ms())) {
      continue;
    }
    int at_receiver = circuits_->allowance(names.receiver, topic.circuit_failures);
    const std::string& receiver = at_receiver >= 0 ? names.receiver : names.endpoint;
    int allowed = at_receiver >= 0 ? at_receiver
                                   : circuits_->allowance(names.endpoint, topic.circuit_failures);
    if (allowed >= 0) {
      // Probing: the receiver's calls in flight, and those reserves in flight
      // may bring, use the allowance up.
      auto busy = receiver_in_flight_.find(receiver);
      allowed -= busy == receiver_in_flight_.end() ? 0 : busy->second;
      for (const auto& state : shards_) {
        auto promised = state.probes_promised.find(receiver);
        allowed -= promised == state.probes_promised.end() ? 0 : promised->second;
      }
      if (allowed <= 0) {
        continue;
      }
      (*probing)[topic.name] = receiver;
      (*room)[receiver] = allowed;  // the same for each of its topics
    }
    scratch->push_back(topic);
  }
  return *scratch;
}

}  // namespace dq

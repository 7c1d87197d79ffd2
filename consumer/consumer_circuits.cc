// ConsumerLoop's part of circuit breaking per receiver
// (consumer/circuit_keeper.h): which receivers to watch, the topics a
// reserve may list while some circuit is not closed, and planning again
// when a circuit changes.
#include <algorithm>

#include "common/registry/receiver.h"
#include "consumer/circuit_keeper.h"
#include "consumer/consumer_loop.h"

namespace dq {

void ConsumerLoop::circuits_changed() {
  // A circuit changed: topics it stopped may take jobs again (or not).
  for (auto& state : shards_) {
    state.maybe_ready = true;
  }
  ++changes_;
  plan_soon();
}

const std::string& ConsumerLoop::receiver_of(const Topic& topic) {
  auto it = receivers_.find(topic.callback_url);
  if (it != receivers_.end()) {
    return it->second;
  }
  if (receivers_.size() >= 4096) {
    receivers_.clear();  // topics come and go
  }
  return receivers_.emplace(topic.callback_url, callback_receiver(topic.callback_url))
      .first->second;
}

void ConsumerLoop::watch_receivers() {
  std::map<std::string, int64_t> lease_ms;
  for (const Topic& topic : online_) {
    const std::string& receiver = receiver_of(topic);
    if (topic.circuit_breaker && !receiver.empty()) {
      int64_t lease = topic.timeout_ms + config_.lease_margin_ms;
      lease_ms[receiver] = std::max(lease_ms[receiver], lease);
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
    const std::string& receiver = receiver_of(topic);
    int allowed = topic.circuit_breaker && !receiver.empty()
                      ? circuits_->allowance(receiver, topic.circuit_failures)
                      : -1;
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

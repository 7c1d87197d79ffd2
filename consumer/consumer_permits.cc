// ConsumerLoop's part of the topic caps (consumer/permit_keeper.h): how many
// permits to keep on hand per capped topic, and reserves that take no more
// jobs of a capped topic than the permits taken for them.
#include <algorithm>
#include <set>

#include "common/registry/topic_caps.h"
#include "consumer/consumer_loop.h"
#include "consumer/slot_planner.h"

namespace dq {

// Enough permits for the jobs known to be ready (the last reserve on each
// shard counted them), within the slots the topic may hold in this process
// and what its caps could give at once.
void ConsumerLoop::update_permit_wants(const std::vector<Topic>& online) {
  const int cap = topic_cap(config_.consumer_concurrency, online.size());
  std::set<std::string> capped;
  for (const Topic& topic : online) {
    if (has_caps(topic)) {
      capped.insert(topic.name);
    }
  }
  // A topic that lost its caps or went offline wants no permits any more.
  for (const std::string& name : capped_) {
    if (capped.count(name) == 0) {
      Topic gone;
      gone.name = name;
      permits_->want(gone, 0);
      waiting_.erase(name);
    }
  }
  capped_ = std::move(capped);
  for (const Topic& topic : online) {
    if (!has_caps(topic)) {
      continue;
    }
    int64_t ready = 0;
    auto seen = waiting_.find(topic.name);
    if (seen != waiting_.end()) {
      for (const auto& [shard, jobs] : seen->second) {
        ready += jobs;
      }
    }
    auto held = in_flight_.find(topic.name);
    int64_t calls = held == in_flight_.end() ? 0 : held->second;
    int64_t wanted = std::min<int64_t>(ready, cap - calls);
    if (topic.max_in_flight > 0) {
      // Our own calls hold permits already: never ask for more than the rest.
      wanted = std::min<int64_t>(wanted, topic.max_in_flight - calls);
    }
    if (topic.max_rate > 0) {
      wanted = std::min<int64_t>(wanted, effective_burst(topic));
    }
    // Permits taken for reserves in flight are on their way to being used.
    for (const auto& state : shards_) {
      auto taken = state.permits.find(topic.name);
      if (taken != state.permits.end()) {
        wanted -= static_cast<int64_t>(taken->second.size());
      }
    }
    permits_->want(topic, static_cast<int>(std::max<int64_t>(0, wanted)));
  }
}

// Clamps each capped topic's slot to the permits on hand, taking them for
// this reserve; returns the capped topics whose ready jobs it should count.
std::vector<std::string> ConsumerLoop::take_permits(const std::vector<Topic>& online,
                                                    std::vector<ReserveSlot>& slots,
                                                    ShardState& state) {
  std::vector<std::string> probe;
  for (ReserveSlot& slot : slots) {
    auto topic = std::find_if(online.begin(), online.end(),
                              [&](const Topic& t) { return t.name == slot.topic; });
    if (topic == online.end() || !has_caps(*topic)) {
      continue;
    }
    probe.push_back(slot.topic);
    std::vector<Permit> taken = permits_->take(slot.topic, slot.cap);
    slot.cap = static_cast<int>(taken.size());
    slot.share = std::min(slot.share, slot.cap);
    if (!taken.empty()) {
      state.permits[slot.topic] = std::move(taken);
    }
  }
  return probe;
}

void ConsumerLoop::give_back_unused(std::map<std::string, std::vector<Permit>>& permits) {
  for (auto& [topic, unused] : permits) {
    permits_->put_back(topic, std::move(unused));
  }
  permits.clear();
}

// A call ended (or never started): its permit goes back.
void ConsumerLoop::end_call(Delivery& delivery) {
  if (delivery.permit) {
    permits_->give_back(delivery.job.topic,
                        {std::move(*delivery.permit), delivery.permit_taken_ms});
    delivery.permit.reset();
  }
}

}  // namespace dq

// Weighted priority rotation with per-topic caps (see slot_planner.h).
#include "consumer/slot_planner.h"

#include <algorithm>

#include "common/core/late_policy.h"
#include "common/registry/retry_policy.h"
#include "common/store/end_memory.h"

namespace dq {
namespace {

int class_weight(int priority) {
  switch (priority) {
    case 1:
      return 6;
    case 3:
      return 1;
    default:
      return 3;
  }
}

// Which priority class goes first in each of ten rounds: 1 six times, 2 three
// times, 3 once.
constexpr int kFirstClass[10] = {1, 2, 1, 1, 2, 1, 3, 1, 2, 1};

}  // namespace

int topic_cap(int concurrency, size_t online_topics) {
  if (online_topics <= 1) {
    return std::max(1, concurrency);
  }
  return std::max(1, concurrency * 3 / 4);
}

std::vector<ReserveSlot> plan_slots(const SlotPlanInput& input) {
  std::vector<ReserveSlot> slots;
  const auto& topics = *input.topics;
  if (topics.empty() || input.free_slots <= 0) {
    return slots;
  }

  // Topics by class, each class rotated so topics of equal priority take turns.
  std::vector<const Topic*> by_class[4];
  for (const auto& topic : topics) {
    by_class[std::clamp(topic.priority, 1, 3)].push_back(&topic);
  }
  for (auto& members : by_class) {
    if (members.empty()) {
      continue;
    }
    std::rotate(members.begin(), members.begin() + (input.round % members.size()), members.end());
  }
  int first = kFirstClass[input.round % 10];
  std::vector<int> class_order = {first};
  for (int priority = 1; priority <= 3; ++priority) {
    if (priority != first) {
      class_order.push_back(priority);
    }
  }

  int total_weight = 0;
  for (const auto& topic : topics) {
    total_weight += class_weight(topic.priority);
  }
  const int cap = topic_cap(input.concurrency, topics.size());
  for (int priority : class_order) {
    for (const Topic* topic : by_class[priority]) {
      auto held = input.in_flight->find(topic->name);
      int in_flight = held == input.in_flight->end() ? 0 : held->second;
      int room = std::max(0, cap - in_flight);
      int share = (input.free_slots * class_weight(priority) + total_weight - 1) / total_weight;
      ReserveSlot slot;
      slot.topic = topic->name;
      slot.lease_ms = topic->timeout_ms + input.lease_margin_ms;
      slot.share = std::min(std::max(1, share), room);
      slot.cap = room;
      slot.max_attempts = max_attempts(*topic, input.default_max_attempts);
      slot.end_memory = end_memory_of(*topic).arg();
      slot.late_policy = late_policy_arg(topic->late_policy);
      slot.dead_callback = !topic->dead_callback.empty();
      slots.push_back(std::move(slot));
    }
  }
  return slots;
}

}  // namespace dq

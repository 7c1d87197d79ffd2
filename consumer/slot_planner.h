// SlotPlanner: decides, for one reserve call, how many jobs to take from each
// online topic. Priority 1 is served before 2 before 3, but not exclusively:
// the class that goes first rotates with weights 6/3/1 over ten rounds, each
// topic's share of the free slots follows its class weight (at least one),
// and no topic may hold more than a cap of the deliveries in flight, so one
// slow callback URL cannot take every slot.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/registry.h"
#include "common/script_calls.h"

namespace dq {

struct SlotPlanInput {
  const std::vector<Topic>* topics = nullptr;             // online topics
  const std::map<std::string, int>* in_flight = nullptr;  // per topic
  int free_slots = 0;
  int concurrency = 0;
  int64_t lease_margin_ms = 0;
  uint64_t round = 0;  // advances by one per call
};

// The most deliveries in flight for one topic: half the concurrency when
// several topics are online, all of it when there is only one.
int topic_cap(int concurrency, size_t online_topics);

std::vector<ReserveSlot> plan_slots(const SlotPlanInput& input);

}  // namespace dq

// SlotPlanner: decides, for one reserve call, what each online topic may
// take. Every online topic is listed (so the reserve reports how many jobs
// are still ready in all of them), in priority order: the class that goes
// first rotates with weights 6/3/1 over ten rounds (1 before 2 before 3, but
// not exclusively), and topics of one class take turns. Each topic's fair
// share of the free slots follows its class weight (at least one); what the
// shares leave unused goes to topics that still have jobs, up to a cap: when
// several topics are online, no topic may hold more than three quarters of
// the deliveries in flight, so one slow callback URL cannot take every slot.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/registry/registry.h"
#include "common/store/script_calls.h"

namespace dq {

struct SlotPlanInput {
  const std::vector<Topic>* topics = nullptr;             // online topics
  const std::map<std::string, int>* in_flight = nullptr;  // per topic
  int free_slots = 0;
  int concurrency = 0;
  int64_t lease_margin_ms = 0;
  int default_max_attempts = 1;
  uint64_t round = 0;  // advances by one per call
};

// The most deliveries in flight for one topic: three quarters of the
// concurrency when several topics are online, all of it when only one is.
int topic_cap(int concurrency, size_t online_topics);

std::vector<ReserveSlot> plan_slots(const SlotPlanInput& input);

}  // namespace dq

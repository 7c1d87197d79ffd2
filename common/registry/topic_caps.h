// A topic's caps on calls to its callback (max_in_flight, max_rate,
// max_burst): their checks and the burst a rate gets when none is set.
// docs/delivery.md, "Caps per topic", says how they are enforced.
#pragma once

#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq {

constexpr int kMaxTopicInFlight = 100000;
constexpr int kMaxTopicRate = 1000000;

// Checks the three caps; the Status names the first bad field.
Status validate_topic_caps(const Topic& topic);

// The burst of a rate cap: max_burst, or a tenth of a second's calls (at
// least 1) when it is 0. 0 when the topic has no rate cap.
int effective_burst(const Topic& topic);

// True when the topic has either cap.
inline bool has_caps(const Topic& topic) { return topic.max_in_flight > 0 || topic.max_rate > 0; }

}  // namespace dq

// Implements common/registry/topic_caps.h.
#include "common/registry/topic_caps.h"

#include <algorithm>
#include <string>

namespace dq {
namespace {

Status out_of_range(const char* field, int value, int most, const char* zero) {
  return Status(Code::kInvalid, std::string(field) + ": " + std::to_string(value) +
                                    " must be from 0 (" + zero + ") to " + std::to_string(most));
}

}  // namespace

Status validate_topic_caps(const Topic& topic) {
  if (topic.max_in_flight < 0 || topic.max_in_flight > kMaxTopicInFlight) {
    return out_of_range("max_in_flight", topic.max_in_flight, kMaxTopicInFlight, "no cap");
  }
  if (topic.max_rate < 0 || topic.max_rate > kMaxTopicRate) {
    return out_of_range("max_rate", topic.max_rate, kMaxTopicRate, "no cap");
  }
  if (topic.max_burst < 0 || topic.max_burst > kMaxTopicRate) {
    return out_of_range("max_burst", topic.max_burst, kMaxTopicRate, "a tenth of max_rate");
  }
  if (topic.max_burst > 0 && topic.max_rate == 0) {
    return Status(Code::kInvalid, "max_burst: " + std::to_string(topic.max_burst) +
                                      " needs a max_rate (it is the burst above that rate)");
  }
  return Status::ok();
}

int effective_burst(const Topic& topic) {
  if (topic.max_rate <= 0) {
    return 0;
  }
  return topic.max_burst > 0 ? topic.max_burst : std::max(1, topic.max_rate / 10);
}

}  // namespace dq

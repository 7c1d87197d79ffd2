// How long a stopping consumer may take (see drain_time.h).
#include "common/registry/drain_time.h"

#include <algorithm>

namespace dq {
namespace {

// validate_topic's upper bound for timeout_ms (common/registry/registry.cc).
constexpr int64_t kMaxTopicTimeoutMs = 600000;

}  // namespace

int64_t consumer_drain_ms(const Config& config, int64_t longest_topic_timeout_ms) {
  int64_t calls = longest_topic_timeout_ms <= 0
                      ? 0
                      : longest_topic_timeout_ms + static_cast<int64_t>(config.lease_margin_ms);
  return std::max(static_cast<int64_t>(config.drain_timeout_ms), calls);
}

int64_t longest_topic_timeout_ms(const std::vector<Topic>& topics) {
  int64_t longest = 0;
  for (const Topic& topic : topics) {
    longest = std::max(longest, static_cast<int64_t>(topic.timeout_ms));
  }
  return longest;
}

int64_t consumer_drain_ms_from_registry(const Config& config) {
  auto registry = Registry::open(config.sqlite_path);
  if (!registry.is_ok()) {
    return consumer_drain_ms(config, kMaxTopicTimeoutMs);
  }
  auto topics = (*registry)->list_topics();
  if (!topics.is_ok()) {
    return consumer_drain_ms(config, kMaxTopicTimeoutMs);
  }
  return consumer_drain_ms(config, longest_topic_timeout_ms(*topics));
}

}  // namespace dq

// The 2k-1 backoff schedule and its per-topic override.
#include "common/registry/retry_policy.h"

#include <algorithm>
#include <cctype>

namespace dq {

Result<std::vector<int64_t>> parse_retry_schedule(const std::string& text) {
  std::vector<int64_t> schedule;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) {
      comma = text.size();
    }
    std::string item = text.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty() || item.size() > 12 ||
        !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); })) {
      return Status(Code::kInvalid,
                    "retry_ms must be comma-separated positive milliseconds, got '" + text + "'");
    }
    int64_t value = std::stoll(item);
    if (value <= 0) {
      return Status(Code::kInvalid, "retry_ms entries must be > 0");
    }
    schedule.push_back(value);
    pos = comma + 1;
  }
  return schedule;
}

int64_t retry_delay_ms(const Topic& topic, int failure, int64_t backoff_unit_ms) {
  failure = std::max(1, failure);
  auto schedule = parse_retry_schedule(topic.retry_ms);
  if (schedule.is_ok() && !schedule->empty()) {
    size_t index = std::min(static_cast<size_t>(failure), schedule->size()) - 1;
    return (*schedule)[index];
  }
  return (2 * static_cast<int64_t>(failure) - 1) * backoff_unit_ms;
}

int max_attempts(const Topic& topic, int default_max_attempts) {
  return topic.max_attempts > 0 ? topic.max_attempts : std::max(1, default_max_attempts);
}

}  // namespace dq

// Implements common/registry/delivery_rules.h.
#include "common/registry/delivery_rules.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "common/core/text_list.h"

namespace dq {

Result<std::vector<int>> parse_dead_on(const std::string& text) {
  std::vector<int> statuses;
  auto refuse = [&](const std::string& why) {
    return Status(Code::kInvalid, "dead_on: '" + text + "' " + why);
  };
  if (text.size() > 1024) {
    return Status(Code::kInvalid, "dead_on: longer than 1024 bytes");
  }
  for (const std::string& item : text.empty() ? std::vector<std::string>() : split_items(text)) {
    if (item.size() != 3 || item.find_first_not_of("0123456789") != std::string::npos) {
      return refuse("must be a comma-separated list of 3-digit HTTP statuses (e.g. 400,410,422)");
    }
    int status = std::stoi(item);
    if (status < 100 || status > 599) {
      return refuse("must hold statuses from 100 to 599, not " + item);
    }
    if (status >= 200 && status < 300) {
      return refuse("cannot hold " + item + ": a 2xx answer is a success");
    }
    if (std::find(statuses.begin(), statuses.end(), status) == statuses.end()) {
      statuses.push_back(status);
    }
    if (statuses.size() > kMaxDeadOnStatuses) {
      return refuse("holds more than " + std::to_string(kMaxDeadOnStatuses) + " statuses");
    }
  }
  return statuses;
}

bool is_dead_on(const std::string& dead_on, long http_status) {
  if (dead_on.empty() || http_status <= 0) {
    return false;
  }
  auto statuses = parse_dead_on(dead_on);
  if (!statuses.is_ok()) {
    return false;
  }
  return std::find(statuses->begin(), statuses->end(), static_cast<int>(http_status)) !=
         statuses->end();
}

int64_t jittered_wait_ms(int64_t wait_ms, int percent, double unit) {
  if (wait_ms <= 0 || percent <= 0) {
    return std::max<int64_t>(wait_ms, 0);
  }
  percent = std::min(percent, kMaxRetryJitterPercent);
  unit = std::clamp(unit, 0.0, 1.0);
  double spread = static_cast<double>(wait_ms) * percent / 100.0;
  auto extra = static_cast<int64_t>(std::floor(spread * unit));
  return wait_ms + std::min(extra, static_cast<int64_t>(spread));
}

int64_t jittered_wait_ms(int64_t wait_ms, int percent) {
  if (percent <= 0) {
    return wait_ms;
  }
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  return jittered_wait_ms(wait_ms, percent, unit(generator));
}

}  // namespace dq

// Implements admin/login_limiter.h.
#include "admin/login_limiter.h"

#include <algorithm>

namespace dq {

int64_t LoginLimiter::wait_for(std::map<std::string, std::deque<int64_t>>& failures,
                               const std::string& key, int limit, int64_t now_ms) {
  auto it = failures.find(key);
  if (it == failures.end()) {
    return 0;
  }
  auto& times = it->second;
  while (!times.empty() && times.front() <= now_ms - window_ms_) {
    times.pop_front();
  }
  if (times.empty()) {
    failures.erase(it);
    return 0;
  }
  if (static_cast<int>(times.size()) < limit) {
    return 0;
  }
  return std::max<int64_t>(1, (times.front() + window_ms_ - now_ms + 999) / 1000);
}

int64_t LoginLimiter::wait_s(const std::string& ip, const std::string& user, int64_t now_ms) {
  return std::max(wait_for(by_ip_, ip, per_ip_, now_ms),
                  wait_for(by_user_, user, per_user_, now_ms));
}

void LoginLimiter::failed(const std::string& ip, const std::string& user, int64_t now_ms) {
  by_ip_[ip].push_back(now_ms);
  by_user_[user].push_back(now_ms);
  // Bound the memory an attacker trying many names can take.
  if (by_user_.size() > 10000) {
    by_user_.clear();
  }
  if (by_ip_.size() > 10000) {
    by_ip_.clear();
  }
}

}  // namespace dq

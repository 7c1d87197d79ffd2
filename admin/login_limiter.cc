// Implements admin/login_limiter.h.
#include "admin/login_limiter.h"

#include <algorithm>

namespace dq {
namespace {

// A user name may hold any byte but NUL; an address never holds a space.
std::string address_user(const std::string& address, const std::string& user) {
  return address + " " + user;
}

// Bounds the memory an attacker trying many names or addresses can take.
constexpr size_t kMaxKeys = 10000;

}  // namespace

int64_t LoginLimiter::wait_for(Failures& failures, const std::string& key, int limit,
                               int64_t now_ms) {
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
  // Free again when the oldest failure that still counts leaves the window.
  int64_t free_at = times[times.size() - static_cast<size_t>(limit)] + window_ms_;
  return std::max<int64_t>(1, (free_at - now_ms + 999) / 1000);
}

int64_t LoginLimiter::wait_s(const std::string& address, const std::string& user, int64_t now_ms) {
  return std::max(
      {wait_for(by_address_user_, address_user(address, user), per_address_user_, now_ms),
       wait_for(by_address_, address, per_address_, now_ms),
       wait_for(by_user_, user, per_user_everywhere_, now_ms)});
}

void LoginLimiter::failed(const std::string& address, const std::string& user, int64_t now_ms) {
  for (Failures* failures : {&by_address_user_, &by_address_, &by_user_}) {
    if (failures->size() > kMaxKeys) {
      failures->clear();
    }
  }
  by_address_user_[address_user(address, user)].push_back(now_ms);
  by_address_[address].push_back(now_ms);
  by_user_[user].push_back(now_ms);
}

void LoginLimiter::succeeded(const std::string& address, const std::string& user) {
  by_address_user_.erase(address_user(address, user));
}

}  // namespace dq

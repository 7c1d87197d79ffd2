// LoginLimiter: refuses login attempts from an address, or for a user name,
// that failed too often lately (a sliding window), before any password is
// checked, so guessing costs the attacker time and the server no hashing.
// Kept in memory: dq-admin is one process, and a respawn forgetting the
// count is acceptable (it also takes seconds).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace dq {

class LoginLimiter {
 public:
  LoginLimiter(int per_ip, int per_user, int64_t window_ms)
      : per_ip_(per_ip), per_user_(per_user), window_ms_(window_ms) {}

  // 0 when an attempt may be made now, else the seconds to wait.
  int64_t wait_s(const std::string& ip, const std::string& user, int64_t now_ms);
  void failed(const std::string& ip, const std::string& user, int64_t now_ms);
  void succeeded(const std::string& user) { by_user_.erase(user); }

 private:
  int64_t wait_for(std::map<std::string, std::deque<int64_t>>& failures, const std::string& key,
                   int limit, int64_t now_ms);

  int per_ip_;
  int per_user_;
  int64_t window_ms_;
  std::map<std::string, std::deque<int64_t>> by_ip_;
  std::map<std::string, std::deque<int64_t>> by_user_;
};

}  // namespace dq

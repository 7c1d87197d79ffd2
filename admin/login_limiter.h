// LoginLimiter: refuses login attempts that failed too often lately (a
// sliding window), before any password is checked, so guessing costs the
// attacker time and the server no hashing. Counted per client address:
//   - a user name from one address (per_address_user, 5): five wrong
//     passwords lock that name at that address only, so a guesser (or a
//     colleague's typos) does not lock the real admin out from everywhere;
//   - an address, any name (per_address, 20): one address trying many names;
//   - a user name from every address together (per_user_everywhere, 100):
//     guessing spread over many addresses; it locks the name everywhere, but
//     only after that many failures from at least per_user_everywhere /
//     per_address_user addresses.
// Behind a proxy every client has the proxy's address (docs/admin.md).
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
  LoginLimiter(int per_address_user, int per_address, int per_user_everywhere, int64_t window_ms)
      : per_address_user_(per_address_user),
        per_address_(per_address),
        per_user_everywhere_(per_user_everywhere),
        window_ms_(window_ms) {}

  // 0 when an attempt may be made now, else the seconds to wait.
  int64_t wait_s(const std::string& address, const std::string& user, int64_t now_ms);
  void failed(const std::string& address, const std::string& user, int64_t now_ms);
  // A right password from this address clears that name's failures there.
  void succeeded(const std::string& address, const std::string& user);

 private:
  using Failures = std::map<std::string, std::deque<int64_t>>;
  int64_t wait_for(Failures& failures, const std::string& key, int limit, int64_t now_ms);

  int per_address_user_;
  int per_address_;
  int per_user_everywhere_;
  int64_t window_ms_;
  Failures by_address_user_;  // "address user" -> failure times
  Failures by_address_;
  Failures by_user_;
};

}  // namespace dq

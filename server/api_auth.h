// ApiAuth: the API server's check of API tokens when [server] require_token
// = yes (docs/security.md). It holds the token table (common/registry/api_tokens.h)
// in memory, so the add path never reads SQLite. The table is read again
// when the database changed (PRAGMA data_version), asked every second from
// the server's tick (a deleted token stops working within a second) and when
// a token it does not know is presented (a new token works at once).
// A presented token is hashed (BLAKE2b); the stored hashes sharing its first
// 8 bytes (an index) are compared whole by sodium_memcmp, in constant time.
// The index's timing depends only on the hash of what the client sent. Refusals are counted in
// SharedMetrics as dq_auth_failures_total{protocol,reason}.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/registry/api_tokens.h"

namespace dq {

struct AuthRefusal {
  int http_status = 401;  // 401 no or unknown token, 403 topic out of scope
  std::string error;      // "unauthorized" or "forbidden"
  std::string reason;     // what a person reads
};

class ApiAuth {
 public:
  explicit ApiAuth(const Config& config);
  ~ApiAuth();
  ApiAuth(const ApiAuth&) = delete;
  ApiAuth& operator=(const ApiAuth&) = delete;

  bool required() const { return required_; }
  // Re-reads the table when the database changed and the last look is older
  // than interval_ms (only when tokens are required). On error the last
  // good snapshot stays.
  void refresh_if_older(int64_t interval_ms);

  // Checks a presented token ("" when none came) for `topic` (nullptr for a
  // route without one); `admin`: the route changes topics, and the token
  // needs the admin scope (403 otherwise). nullopt: allowed, and *scope
  // (when given) is the token's scope. Counts refusals under `protocol`
  // ("http", "legacy").
  std::optional<AuthRefusal> check(const std::string& token, const std::string* topic,
                                   const char* protocol, TokenScope* scope = nullptr,
                                   bool admin = false);

 private:
  void reload_if_changed();
  // The stored token whose hash matches, or nullptr.
  const ApiToken* find(const std::string& token) const;

  bool required_;
  std::string sqlite_path_;
  std::unique_ptr<ApiTokens> store_;
  struct Loaded {
    std::array<unsigned char, 32> hash;  // the stored hex hash, decoded once
    ApiToken token;
  };
  std::vector<Loaded> tokens_;
  // tokens_ by the first 8 bytes of their hash: a check compares (with
  // sodium_memcmp) only the few whose prefix matches, not the whole table.
  std::unordered_multimap<uint64_t, size_t> by_prefix_;
  int64_t checked_at_ms_ = -1;
  int64_t data_version_ = -1;  // of the snapshot in tokens_
  RepeatLog errors_;           // a table that cannot be read: once, then with a count
};

// The token of an "Authorization: Bearer <token>" header value; "" for no
// header or another scheme.
std::string bearer_token(const char* authorization);

}  // namespace dq

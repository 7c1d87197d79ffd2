// Sessions of the admin page: a random token (32 bytes from libsodium's
// randombytes, hex) in an HttpOnly SameSite=Strict cookie, stored in SQLite
// by its BLAKE2b hash (sql/004_admin_users.sql) so a respawned dq-admin keeps
// everyone logged in. Each session has its own CSRF token, which the page
// reads from GET /api/session and sends back in X-CSRF-Token on every
// POST/PUT/DELETE. A session ends at logout or after ttl of disuse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/core/status.h"
#include "common/registry/sqlite_db.h"

namespace dq {

struct Session {
  std::string user;
  std::string csrf_token;
  int64_t expires_at_ms = 0;
};

struct NewSession {
  std::string token;  // for the cookie; only its hash is stored
  Session session;
};

class SessionStore {
 public:
  SessionStore(sqlite3* db, int64_t ttl_ms) : db_(db), ttl_ms_(ttl_ms) {}

  Result<NewSession> create(const std::string& user);
  // The live session of this token (its expiry pushed on), nullopt when none.
  Result<std::optional<Session>> find(const std::string& token);
  Status end(const std::string& token);
  // Deletes expired sessions; returns how many.
  Result<int64_t> sweep();

 private:
  sqlite3* db_;
  int64_t ttl_ms_;
};

// Constant-time comparison of two tokens.
bool same_token(const std::string& a, const std::string& b);

}  // namespace dq

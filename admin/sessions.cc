// Implements admin/sessions.h.
#include "admin/sessions.h"

#include <sodium.h>

#include "common/core/clock.h"

namespace dq {
namespace {

constexpr size_t kTokenBytes = 32;

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), raw.size());
  std::string hex(bytes * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), reinterpret_cast<const unsigned char*>(raw.data()),
                 raw.size());
  hex.pop_back();
  return hex;
}

std::string token_hash(const std::string& token) {
  unsigned char digest[32];
  crypto_generichash(digest, sizeof(digest), reinterpret_cast<const unsigned char*>(token.data()),
                     token.size(), nullptr, 0);
  std::string hex(sizeof(digest) * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), digest, sizeof(digest));
  hex.pop_back();
  return hex;
}

}  // namespace

bool same_token(const std::string& a, const std::string& b) {
  return a.size() == b.size() && !a.empty() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<NewSession> SessionStore::create(const std::string& user) {
  NewSession created;
  created.token = random_hex(kTokenBytes);
  created.session.user = user;
  created.session.csrf_token = random_hex(kTokenBytes);
  int64_t now = now_ms();
  created.session.expires_at_ms = now + ttl_ms_;
  Status status = run_sql(db_,
                          "INSERT INTO admin_sessions (token_hash, user, csrf_token, "
                          "created_at_ms, expires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                          token_hash(created.token), user, created.session.csrf_token, now,
                          created.session.expires_at_ms);
  if (!status.is_ok()) {
    return status;
  }
  return created;
}

Result<std::optional<Session>> SessionStore::find(const std::string& token) {
  if (token.size() != kTokenBytes * 2) {
    return std::optional<Session>();
  }
  std::string hash = token_hash(token);
  int64_t now = now_ms();
  // The user must still exist: deleting a user ends its sessions at once.
  Session session;
  {
    // Scoped: the finished read must end before the write below. A statement
    // still on its row keeps a read snapshot, and upgrading it to a write after
    // another process wrote fails at once with "database is locked"
    // (SQLITE_BUSY_SNAPSHOT: the busy timeout cannot help).
    auto stmt = Statement::prepare(
        db_,
        "SELECT s.user, s.csrf_token FROM admin_sessions s JOIN admin_users u ON u.name = s.user "
        "WHERE s.token_hash = ?1 AND s.expires_at_ms > ?2",
        hash, now);
    if (!stmt.is_ok()) {
      return stmt.status();
    }
    auto row = stmt->step();
    if (!row.is_ok()) {
      return row.status();
    }
    if (!*row) {
      return std::optional<Session>();
    }
    session = Session{stmt->column_text(0), stmt->column_text(1), now + ttl_ms_};
  }
  Status touched =
      run_sql(db_, "UPDATE admin_sessions SET expires_at_ms = ?2 WHERE token_hash = ?1", hash,
              session.expires_at_ms);
  if (!touched.is_ok()) {
    return touched;
  }
  return std::optional<Session>(session);
}

Status SessionStore::end(const std::string& token) {
  return run_sql(db_, "DELETE FROM admin_sessions WHERE token_hash = ?1", token_hash(token));
}

Result<int64_t> SessionStore::sweep() {
  Status status = run_sql(db_, "DELETE FROM admin_sessions WHERE expires_at_ms <= ?1", now_ms());
  if (!status.is_ok()) {
    return status;
  }
  return static_cast<int64_t>(sqlite3_changes(db_));
}

}  // namespace dq

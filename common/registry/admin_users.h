// Users of the admin page (dq-admin), kept in SQLite (sql/004_admin_users.sql)
// with libsodium's argon2id password hash. dqctl (`dqctl admin user ...`) and
// dq-admin both use it; dq-admin creates the first user from [admin] user and
// password_file when no user exists.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/registry/sqlite_db.h"

namespace dq {

struct AdminUser {
  std::string name;
  int64_t created_at_ms = 0;
};

// Names: [A-Za-z0-9_.@-]{1,64}. Passwords: 8 to 1024 bytes.
Status validate_admin_user_name(const std::string& name);
Status validate_admin_password(const std::string& password);

// The first line of a password file, without its line break; kInvalid when
// it cannot be read or the password is too short.
Result<std::string> read_password_file(const std::string& path);

class AdminUsers {
 public:
  // Opens the registry database (migrating it) at path.
  static Result<std::unique_ptr<AdminUsers>> open(const std::string& path);

  Status add(const std::string& name, const std::string& password);  // kConflict when it exists
  Status remove(const std::string& name);  // and its sessions; kNotFound when absent
  Result<std::vector<AdminUser>> list();
  // True when the name exists and the password matches. Costs one argon2id
  // verification either way (a missing user is not answered faster).
  Result<bool> verify(const std::string& name, const std::string& password);

  // Creates [admin] user from [admin] password_file when the table is empty;
  // returns true when it did. A password file that does not exist yet is
  // created first with a random password (mode 0600), so a fresh checkout's
  // first start has a user whose password only the machine's owner can read.
  Result<bool> ensure_first_user(const Config& config);

  sqlite3* db() { return db_.get(); }

 private:
  explicit AdminUsers(SqliteHandle db) : db_(std::move(db)) {}
  SqliteHandle db_;
};

}  // namespace dq

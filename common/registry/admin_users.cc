// Implements common/registry/admin_users.h: argon2id via libsodium's crypto_pwhash_str
// (interactive limits: ~64 MiB and a fraction of a second per hash), and the
// admin_users table through bound statements only.
#include "common/registry/admin_users.h"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/core/clock.h"
#include "common/registry/registry.h"

namespace dq {
namespace {

constexpr size_t kMinPasswordBytes = 8;
constexpr size_t kMaxPasswordBytes = 1024;

Result<std::string> hash_password(const std::string& password) {
  char hashed[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(hashed, password.data(), password.size(),
                        crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0) {
    return Status(Code::kInternal, "password hashing ran out of memory");
  }
  return std::string(hashed);
}

// A fresh random password (24 characters from 18 random bytes), written to a
// file only its owner can read.
Status write_new_password_file(const std::string& path) {
  unsigned char raw[18];
  randombytes_buf(raw, sizeof(raw));
  char text[sodium_base64_ENCODED_LEN(sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
  sodium_bin2base64(text, sizeof(text), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  std::error_code error;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, error);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status(Code::kUnavailable, "cannot create " + path + ": " + std::strerror(errno));
  }
  std::string line = std::string(text) + "\n";
  bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!written) {
    return Status(Code::kUnavailable, "cannot write " + path);
  }
  return Status::ok();
}

}  // namespace

Status validate_admin_user_name(const std::string& name) {
  if (name.empty() || name.size() > 64 ||
      name.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@-") !=
          std::string::npos) {
    return Status(Code::kInvalid, "user: names are 1-64 of A-Z a-z 0-9 _ . @ -");
  }
  return Status::ok();
}

Status validate_admin_password(const std::string& password) {
  if (password.size() < kMinPasswordBytes) {
    return Status(Code::kInvalid, "password: at least 8 characters");
  }
  if (password.size() > kMaxPasswordBytes) {
    return Status(Code::kInvalid, "password: at most 1024 bytes");
  }
  return Status::ok();
}

Result<std::string> read_password_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status(Code::kInvalid, "cannot read password file " + path);
  }
  std::string password;
  std::getline(in, password);
  if (!password.empty() && password.back() == '\r') {
    password.pop_back();
  }
  Status valid = validate_admin_password(password);
  if (!valid.is_ok()) {
    return Status(Code::kInvalid, path + ": " + valid.message());
  }
  return password;
}

Result<std::unique_ptr<AdminUsers>> AdminUsers::open(const std::string& path) {
  if (sodium_init() < 0) {
    return Status(Code::kInternal, "libsodium cannot start");
  }
  auto db = open_registry_sqlite(path);
  if (!db.is_ok()) {
    return db.status();
  }
  return std::unique_ptr<AdminUsers>(new AdminUsers(std::move(*db)));
}

Status AdminUsers::add(const std::string& name, const std::string& password) {
  Status valid = validate_admin_user_name(name);
  if (valid.is_ok()) {
    valid = validate_admin_password(password);
  }
  if (!valid.is_ok()) {
    return valid;
  }
  auto hashed = hash_password(password);
  if (!hashed.is_ok()) {
    return hashed.status();
  }
  Status status = run_sql(
      db_.get(), "INSERT INTO admin_users (name, password_hash, created_at_ms) VALUES (?1, ?2, ?3)",
      name, *hashed, now_ms());
  if (status.code() == Code::kConflict) {
    return Status(Code::kConflict, "user '" + name + "' exists already");
  }
  return status;
}

Status AdminUsers::remove(const std::string& name) {
  auto transaction = Transaction::begin(db_.get());
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  auto users = Statement::prepare(db_.get(), "DELETE FROM admin_users WHERE name = ?1", name);
  if (!users.is_ok()) {
    return users.status();
  }
  Status status = users->run_changing("user '" + name + "' does not exist");
  if (!status.is_ok()) {
    return status;
  }
  auto sessions = Statement::prepare(db_.get(), "DELETE FROM admin_sessions WHERE user = ?1", name);
  if (!sessions.is_ok()) {
    return sessions.status();
  }
  status = sessions->run();
  if (!status.is_ok()) {
    return status;
  }
  return (*transaction)->commit();
}

Result<std::vector<AdminUser>> AdminUsers::list() {
  auto stmt =
      Statement::prepare(db_.get(), "SELECT name, created_at_ms FROM admin_users ORDER BY name");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->rows([](const Statement& row) {
    return AdminUser{row.column_text(0), row.column_int(1)};
  });
}

Result<bool> AdminUsers::verify(const std::string& name, const std::string& password) {
  auto found = Statement::first_row(db_.get(),
                                    "SELECT password_hash FROM admin_users WHERE name = ?1", name);
  if (!found.is_ok()) {
    return found.status();
  }
  // A made-up hash for a missing user, so both answers take as long.
  static const std::string kDecoy = [] {
    auto decoy = hash_password("not a password of anyone");
    return decoy.is_ok() ? *decoy : std::string();
  }();
  std::string stored = *found ? (*found)->column_text(0) : kDecoy;
  bool match = crypto_pwhash_str_verify(stored.c_str(), password.data(), password.size()) == 0;
  return found->has_value() && match;
}

Result<bool> AdminUsers::ensure_first_user(const Config& config) {
  if (config.admin_user.empty()) {
    return false;
  }
  auto users = list();
  if (!users.is_ok()) {
    return users.status();
  }
  if (!users->empty()) {
    return false;
  }
  if (!std::filesystem::exists(config.admin_password_file)) {
    Status written = write_new_password_file(config.admin_password_file);
    if (!written.is_ok()) {
      return written;
    }
  }
  auto password = read_password_file(config.admin_password_file);
  if (!password.is_ok()) {
    return password.status();
  }
  Status added = add(config.admin_user, *password);
  if (added.code() == Code::kConflict) {
    return false;  // another process was first
  }
  if (!added.is_ok()) {
    return added;
  }
  return true;
}

}  // namespace dq

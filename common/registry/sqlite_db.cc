// Implements common/registry/sqlite_db.h: opening SQLite in WAL mode, prepared
// statements and transactions.
#include "common/registry/sqlite_db.h"

#include "common/registry/registry_file.h"

namespace dq {

Status sqlite_status(sqlite3* db, int rc, const std::string& what) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message = what + ": " + detail;
  switch (rc & 0xff) {  // primary result code
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_PERM:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return Status(Code::kUnavailable, message);
    case SQLITE_CONSTRAINT:
      return Status(Code::kConflict, message);
    default:
      return Status(Code::kInternal, message);
  }
}

Result<SqliteHandle> open_sqlite(const std::string& path, int busy_timeout_ms) {
  // A file this process (or the master it was forked from) had open is never
  // created again: it was deleted under dq, and an empty one in its place
  // would split the registry (common/registry/registry_file.h).
  bool create = !opened_before(path);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | (create ? SQLITE_OPEN_CREATE : 0), nullptr);
  SqliteHandle db(raw);  // sqlite3_open_v2 allocates a handle even when it fails
  if (rc != SQLITE_OK) {
    if (!create && (rc & 0xff) == SQLITE_CANTOPEN) {
      return Status(Code::kUnavailable,
                    "the registry file " + path +
                        " is gone (deleted while dq runs): this process had it open and does not "
                        "create an empty one in its place; put it back or restart dqd");
    }
    return sqlite_status(db.get(), rc, "cannot open " + path);
  }
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), busy_timeout_ms);
  // journal_mode answers with a row; it stays "delete" if WAL is impossible
  // (e.g. some network file systems), which still works, only with more locking.
  auto wal = Statement::prepare(db.get(), "PRAGMA journal_mode=WAL");
  if (!wal.is_ok()) {
    return wal.status();
  }
  auto row = wal->step();
  if (!row.is_ok()) {
    return Status(row.status().code(), "cannot open " + path + ": " + row.status().message());
  }
  Status status = exec_sql(db.get(), "PRAGMA foreign_keys=ON");
  if (!status.is_ok()) {
    return status;
  }
  remember_opened_file(path);
  return db;
}

Status exec_sql(sqlite3* db, const char* sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  if (rc == SQLITE_OK) {
    return Status::ok();
  }
  Status status = sqlite_status(db, rc, "sql");
  sqlite3_free(error);
  return status;
}

Result<int64_t> pragma_int(sqlite3* db, const char* pragma) {
  auto stmt = Statement::prepare(db, pragma);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  auto row = stmt->step();
  if (!row.is_ok()) {
    return row.status();
  }
  return *row ? stmt->column_int(0) : 0;
}

Result<Statement> Statement::prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return sqlite_status(db, rc, "prepare");
  }
  return Statement(db, stmt);
}

Statement& Statement::bind(int index, const std::string& value) {
  int rc = sqlite3_bind_text(stmt_.get(), index, value.data(), static_cast<int>(value.size()),
                             SQLITE_TRANSIENT);
  if (bind_rc_ == SQLITE_OK) {
    bind_rc_ = rc;
  }
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_.get(), index, value);
  if (bind_rc_ == SQLITE_OK) {
    bind_rc_ = rc;
  }
  return *this;
}

Result<std::optional<Statement>> Statement::first_row(sqlite3* db, const std::string& sql,
                                                      const std::string& key) {
  auto stmt = prepare(db, sql.c_str());
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  stmt->bind(1, key);
  auto row = stmt->step();
  if (!row.is_ok()) {
    return row.status();
  }
  if (!*row) {
    return std::optional<Statement>();
  }
  return std::optional<Statement>(std::move(*stmt));
}

Result<bool> Statement::step() {
  if (bind_rc_ != SQLITE_OK) {
    return sqlite_status(db_, bind_rc_, "bind");
  }
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc == SQLITE_DONE) {
    return false;
  }
  return sqlite_status(db_, rc, "sql");
}

Status Statement::run() {
  for (;;) {
    auto row = step();
    if (!row.is_ok()) {
      return row.status();
    }
    if (!*row) {
      return Status::ok();
    }
  }
}

Status Statement::run_changing(const std::string& missing) {
  Status status = run();
  if (status.is_ok() && sqlite3_changes(db_) == 0) {
    return Status(Code::kNotFound, missing);
  }
  return status;
}

int64_t Statement::column_int(int column) const {
  return sqlite3_column_int64(stmt_.get(), column);
}

std::string Statement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_.get(), column);
  if (text == nullptr) {
    return std::string();
  }
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), column)));
}

Result<std::unique_ptr<Transaction>> Transaction::begin(sqlite3* db) {
  // Inside a transaction already (a shared-registry write tries the change
  // and rolls it back, common/registry/registry_write.h): a savepoint, which
  // the outer transaction commits or rolls back with everything else.
  bool nested = sqlite3_get_autocommit(db) == 0;
  Status status = exec_sql(db, nested ? "SAVEPOINT dq_nested" : "BEGIN IMMEDIATE");
  if (!status.is_ok()) {
    return status;
  }
  return std::unique_ptr<Transaction>(new Transaction(db, nested));
}

Transaction::~Transaction() {
  if (!done_) {
    sqlite3_exec(db_, nested_ ? "ROLLBACK TO dq_nested; RELEASE dq_nested" : "ROLLBACK", nullptr,
                 nullptr, nullptr);
  }
}

Status Transaction::commit() {
  Status status = exec_sql(db_, nested_ ? "RELEASE dq_nested" : "COMMIT");
  if (status.is_ok()) {
    done_ = true;
  }
  return status;
}

}  // namespace dq

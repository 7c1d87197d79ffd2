// SQLite helpers: owning handles for sqlite3 and sqlite3_stmt, a prepared
// statement with bound parameters (the only way dq runs SQL that carries
// values), and a transaction that rolls back unless committed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/core/status.h"

namespace dq {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using SqliteHandle = std::unique_ptr<sqlite3, SqliteCloser>;

struct SqliteFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using SqliteStmtHandle = std::unique_ptr<sqlite3_stmt, SqliteFinalizer>;

// Maps an SQLite result code to a Status: locked/busy and file problems are
// kUnavailable (the database cannot be reached), constraint violations
// kConflict, anything else kInternal. `what` prefixes the message.
Status sqlite_status(sqlite3* db, int rc, const std::string& what);

// Opens (creating if needed) the database file in WAL mode with a busy
// timeout, because several processes read it while dqctl and the admin write.
Result<SqliteHandle> open_sqlite(const std::string& path, int busy_timeout_ms = 5000);

// Runs constant SQL text (schema scripts, BEGIN/COMMIT); never for values.
Status exec_sql(sqlite3* db, const char* sql);

// A prepared statement. Bind errors are remembered and reported by step().
class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, const char* sql);

  // Parameters are numbered from 1, as in SQLite.
  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, int64_t value);

  // Advances: true when a row is available, false when done.
  Result<bool> step();
  // Steps to completion (INSERT/UPDATE/DELETE).
  Status run();

  int64_t column_int(int column) const;
  std::string column_text(int column) const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_;
  SqliteStmtHandle stmt_;
  int bind_rc_ = SQLITE_OK;
};

// BEGIN IMMEDIATE (takes the write lock at once, so two writers wait on the
// busy timeout instead of failing mid-transaction); rolls back on destruction
// unless commit() succeeded.
class Transaction {
 public:
  static Result<std::unique_ptr<Transaction>> begin(sqlite3* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status commit();

 private:
  explicit Transaction(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace dq

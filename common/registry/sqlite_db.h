// SQLite helpers: owning handles for sqlite3 and sqlite3_stmt, a prepared
// statement with bound parameters (the only way dq runs SQL that carries
// values), and a transaction that rolls back unless committed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/core/status.h"
#include "common/core/unique_handle.h"

namespace dq {

using SqliteHandle = UniqueHandle<sqlite3, sqlite3_close_v2>;
using SqliteStmtHandle = UniqueHandle<sqlite3_stmt, sqlite3_finalize>;

// Maps an SQLite result code to a Status: locked/busy and file problems are
// kUnavailable (the database cannot be reached), constraint violations
// kConflict, anything else kInternal. `what` prefixes the message.
Status sqlite_status(sqlite3* db, int rc, const std::string& what);

// Opens (creating if needed) the database file in WAL mode with a busy
// timeout, because several processes read it while dqctl and the admin write.
// A file this process already had open once is not created again
// (kUnavailable when it is gone: common/registry/registry_file.h).
Result<SqliteHandle> open_sqlite(const std::string& path, int busy_timeout_ms = 5000);

// Runs constant SQL text (schema scripts, BEGIN/COMMIT); never for values.
Status exec_sql(sqlite3* db, const char* sql);

// The integer a one-row PRAGMA answers ("PRAGMA user_version", "PRAGMA
// data_version"); 0 when it answers no row.
Result<int64_t> pragma_int(sqlite3* db, const char* pragma);

// A prepared statement. Bind errors are remembered and reported by step().
class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, const char* sql);
  // Prepares `sql` with `values` bound to ?1, ?2, ... in order (text as
  // std::string or const char*, any integer as int64_t).
  template <typename... Values>
  static Result<Statement> prepare(sqlite3* db, const char* sql, const Values&... values);
  // Prepares `sql`, binds `key` to ?1 and steps once: the statement standing
  // on its first row, or nullopt when there is none.
  static Result<std::optional<Statement>> first_row(sqlite3* db, const std::string& sql,
                                                    const std::string& key);

  // Parameters are numbered from 1, as in SQLite.
  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, int64_t value);

  // Advances: true when a row is available, false when done.
  Result<bool> step();
  // Steps to completion (INSERT/UPDATE/DELETE).
  Status run();
  // run(), and kNotFound `missing` when it changed no row (UPDATE/DELETE of one).
  Status run_changing(const std::string& missing);
  // Every row, each turned into a value by read_row(*this).
  template <typename ReadRow>
  auto rows(ReadRow read_row) -> Result<std::vector<decltype(read_row(*this))>>;

  int64_t column_int(int column) const;
  std::string column_text(int column) const;
  // Reads columns 0, 1, ... of the current row into `fields`, in order: text
  // into std::string, integers into int64_t or int, 0/1 into bool, an integer
  // or NULL into std::optional<int64_t>.
  template <typename... Fields>
  void read(Fields*... fields) const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  template <typename Value>
  void bind_value(int index, const Value& value);
  void read_column(int column, std::string* field) const { *field = column_text(column); }
  void read_column(int column, int64_t* field) const { *field = column_int(column); }
  void read_column(int column, int* field) const { *field = static_cast<int>(column_int(column)); }
  void read_column(int column, bool* field) const { *field = column_int(column) != 0; }
  void read_column(int column, std::optional<int64_t>* field) const {
    *field = sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL
                 ? std::nullopt
                 : std::optional<int64_t>(column_int(column));
  }
  sqlite3* db_;
  SqliteStmtHandle stmt_;
  int bind_rc_ = SQLITE_OK;
};

template <typename Value>
void Statement::bind_value(int index, const Value& value) {
  if constexpr (std::is_integral_v<Value>) {
    bind(index, static_cast<int64_t>(value));
  } else {
    bind(index, std::string(value));
  }
}

template <typename... Values>
Result<Statement> Statement::prepare(sqlite3* db, const char* sql, const Values&... values) {
  auto stmt = prepare(db, sql);
  if (stmt.is_ok()) {
    int index = 0;
    (stmt->bind_value(++index, values), ...);
  }
  return stmt;
}

template <typename... Fields>
void Statement::read(Fields*... fields) const {
  int column = 0;
  (read_column(column++, fields), ...);
}

// Runs one statement that answers no rows (INSERT/UPDATE/DELETE) with
// `values` bound to ?1, ?2, ...
template <typename... Values>
Status run_sql(sqlite3* db, const char* sql, const Values&... values) {
  auto stmt = Statement::prepare(db, sql, values...);
  return stmt.is_ok() ? stmt->run() : stmt.status();
}

template <typename ReadRow>
auto Statement::rows(ReadRow read_row) -> Result<std::vector<decltype(read_row(*this))>> {
  std::vector<decltype(read_row(*this))> values;
  for (;;) {
    auto row = step();
    if (!row.is_ok()) {
      return row.status();
    }
    if (!*row) {
      return values;
    }
    values.push_back(read_row(*this));
  }
}

// BEGIN IMMEDIATE (takes the write lock at once, so two writers wait on the
// busy timeout instead of failing mid-transaction), or a savepoint when a
// transaction is open already; rolls back on destruction unless commit()
// succeeded.
class Transaction {
 public:
  static Result<std::unique_ptr<Transaction>> begin(sqlite3* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status commit();

 private:
  Transaction(sqlite3* db, bool nested) : db_(db), nested_(nested) {}
  sqlite3* db_;
  bool nested_;  // a savepoint within an outer transaction
  bool done_ = false;
};

}  // namespace dq

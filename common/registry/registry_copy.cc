// Implements common/registry/registry_copy.h.
#include "common/registry/registry_copy.h"

namespace dq {
std::string version_conflict_message(const std::string& kind, const std::string& name, int64_t read,
                                     int64_t now) {
  return kind + " '" + name + "' was changed by someone else: you read version " +
         std::to_string(read) + ", it is at version " + std::to_string(now) +
         "; read it again and redo the change";
}

Result<LocalVersion> local_version(sqlite3* db, const std::string& kind, const std::string& name) {
  auto stmt = Statement::prepare(
      db, "SELECT version, row_hash FROM registry_versions WHERE kind = ?1 AND name = ?2", kind,
      name);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  auto row = stmt->step();
  if (!row.is_ok()) {
    return row.status();
  }
  LocalVersion version;
  if (*row) {
    version.version = stmt->column_int(0);
    version.row_hash = stmt->column_text(1);
  }
  return version;
}

Result<std::map<std::string, LocalVersion>> local_versions(sqlite3* db, const std::string& kind) {
  auto stmt = Statement::prepare(
      db, "SELECT name, version, row_hash FROM registry_versions WHERE kind = ?1", kind);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  auto rows = stmt->rows([](const Statement& row) {
    return std::make_pair(row.column_text(0), LocalVersion{row.column_int(1), row.column_text(2)});
  });
  if (!rows.is_ok()) {
    return rows.status();
  }
  return std::map<std::string, LocalVersion>(rows->begin(), rows->end());
}

Status set_local_version(sqlite3* db, const std::string& kind, const std::string& name,
                         const LocalVersion& version) {
  return run_sql(
      db,
      "INSERT INTO registry_versions (kind, name, version, row_hash) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT(kind, name) DO UPDATE SET version = excluded.version, "
      "row_hash = excluded.row_hash",
      kind, name, version.version, version.row_hash);
}

Status forget_version(sqlite3* db, const std::string& kind, const std::string& name) {
  return run_sql(db, "DELETE FROM registry_versions WHERE kind = ?1 AND name = ?2", kind, name);
}

Result<int64_t> seen_change(sqlite3* db) {
  auto stmt = Statement::prepare(db, "SELECT value FROM registry_sync WHERE key = 'seen_change'");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  auto row = stmt->step();
  if (!row.is_ok()) {
    return row.status();
  }
  return *row ? std::stoll("0" + stmt->column_text(0)) : 0;
}

Status set_seen_change(sqlite3* db, int64_t change) {
  return run_sql(db,
                 "INSERT INTO registry_sync (key, value) VALUES ('seen_change', ?1) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                 std::to_string(change));
}

Status forget_versions(sqlite3* db) {
  Status status = exec_sql(db, "DELETE FROM registry_versions");
  return status.is_ok() ? exec_sql(db, "DELETE FROM registry_sync") : status;
}

Result<bool> apply_registry_record(sqlite3* db, const RegistryRecord& record) {
  const RegistryKind* kind = find_registry_kind(record.kind);
  if (kind == nullptr) {
    return false;  // a kind a newer host shares: not kept here
  }
  auto have = local_version(db, record.kind, record.name);
  if (!have.is_ok()) {
    return have.status();
  }
  if (have->version >= record.version) {
    return false;
  }
  Status status = write_registry_row(db, *kind, record.name, record.row);
  if (!status.is_ok()) {
    return status;
  }
  LocalVersion now{record.version, kDeletedHash};
  if (record.row) {
    auto stored = read_registry_row(db, *kind, record.name);
    if (!stored.is_ok()) {
      return stored.status();
    }
    now.row_hash = *stored ? registry_row_hash(**stored) : kDeletedHash;
  }
  status = set_local_version(db, record.kind, record.name, now);
  if (!status.is_ok()) {
    return status;
  }
  return true;
}

Result<std::optional<Json>> preview_registry_row(sqlite3* db, const RegistryKind& kind,
                                                 const std::string& name,
                                                 const std::function<Status()>& change) {
  auto transaction = Transaction::begin(db);
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  Status status = change();
  if (!status.is_ok()) {
    return status;
  }
  return read_registry_row(db, kind, name);  // the transaction rolls back here
}

Result<int64_t> local_versioned_write(sqlite3* db, const RegistryKind& kind,
                                      const std::string& name, std::optional<int64_t> expected,
                                      const std::function<Status()>& change) {
  auto transaction = Transaction::begin(db);
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  auto have = local_version(db, kind.kind, name);
  if (!have.is_ok()) {
    return have.status();
  }
  if (expected && *expected != have->version) {
    return Status(Code::kConflict,
                  version_conflict_message(kind.kind, name, *expected, have->version));
  }
  Status status = change();
  if (!status.is_ok()) {
    return status;
  }
  auto stored = read_registry_row(db, kind, name);
  if (!stored.is_ok()) {
    return stored.status();
  }
  LocalVersion now{have->version + 1, *stored ? registry_row_hash(**stored) : kDeletedHash};
  status = set_local_version(db, kind.kind, name, now);
  if (status.is_ok()) {
    status = (*transaction)->commit();
  }
  if (!status.is_ok()) {
    return status;
  }
  return now.version;
}

}  // namespace dq

// Implements common/registry/registry_rows.h. Table and column names in the
// SQL built here come from the kinds table below and from the local table's
// own PRAGMA table_info, never from a peer's JSON: a JSON key that is not a
// column of the local table is ignored.
#include "common/registry/registry_rows.h"

#include <cstdio>
#include <set>

#include "common/registry/schedule_store.h"

namespace dq {
namespace {

using StmtPtr = SqliteStmtHandle;

Result<StmtPtr> prepare_raw(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr);
  StmtPtr stmt(raw);
  if (rc != SQLITE_OK) {
    return sqlite_status(db, rc, "cannot prepare registry row SQL");
  }
  return stmt;
}

std::string sql_name(const std::string& name) { return "\"" + name + "\""; }

Json column_json(sqlite3_stmt* stmt, int column) {
  switch (sqlite3_column_type(stmt, column)) {
    case SQLITE_INTEGER:
      return Json(static_cast<int64_t>(sqlite3_column_int64(stmt, column)));
    case SQLITE_FLOAT:
      return Json(sqlite3_column_double(stmt, column));
    case SQLITE_TEXT:
      return Json(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, column)),
                              static_cast<size_t>(sqlite3_column_bytes(stmt, column))));
    default:
      return Json(nullptr);
  }
}

int bind_json(sqlite3_stmt* stmt, int index, const Json& value) {
  if (value.is_number_integer() || value.is_boolean()) {
    return sqlite3_bind_int64(
        stmt, index, value.is_boolean() ? int64_t{value.get<bool>()} : value.get<int64_t>());
  }
  if (value.is_number()) {
    return sqlite3_bind_double(stmt, index, value.get<double>());
  }
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    return sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()),
                             SQLITE_TRANSIENT);
  }
  return sqlite3_bind_null(stmt, index);
}

Status step_done(sqlite3* db, sqlite3_stmt* stmt, const std::string& what) {
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    return sqlite_status(db, rc, what);
  }
  return Status::ok();
}

Result<std::set<std::string>> table_columns(sqlite3* db, const std::string& table) {
  auto stmt = prepare_raw(db, "PRAGMA table_info(" + sql_name(table) + ")");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  std::set<std::string> columns;
  while (sqlite3_step(stmt->get()) == SQLITE_ROW) {
    std::string name = reinterpret_cast<const char*>(sqlite3_column_text(stmt->get(), 1));
    if (name.find('"') == std::string::npos) {
      columns.insert(name);
    }
  }
  return columns;
}

Status write_settings(sqlite3* db, const RegistryKind& kind, const std::optional<Json>& row) {
  Status status = exec_sql(db, (std::string("DELETE FROM ") + kind.table).c_str());
  if (!status.is_ok() || !row || !row->is_object()) {
    return status;
  }
  for (const auto& item : row->items()) {
    auto stmt =
        prepare_raw(db, std::string("INSERT INTO ") + kind.table + " (key, value) VALUES (?1, ?2)");
    if (!stmt.is_ok()) {
      return stmt.status();
    }
    bind_json(stmt->get(), 1, Json(item.key()));
    bind_json(stmt->get(), 2, item.value().is_string() ? item.value() : Json(item.value().dump()));
    status = step_done(db, stmt->get(), "cannot write alert settings");
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

// A topic's signing keys (topic_signing_keys) travel in its row as the
// member "signing_keys": an array of the table's rows, secrets as stored, in
// an order every host gives alike (so the same keys hash the same).
constexpr const char* kSigningKeyColumns[] = {"key_id",     "kind",          "secret",
                                              "public_key", "created_at_ms", "retires_at_ms"};

Result<Json> read_signing_keys(sqlite3* db, const std::string& topic) {
  auto stmt =
      prepare_raw(db,
                  "SELECT key_id, kind, secret, public_key, created_at_ms, retires_at_ms "
                  "FROM topic_signing_keys WHERE topic = ?1 ORDER BY created_at_ms, key_id");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  bind_json(stmt->get(), 1, Json(topic));
  Json keys = Json::array();
  for (;;) {
    int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) {
      return keys;
    }
    if (rc != SQLITE_ROW) {
      return sqlite_status(db, rc, "cannot read topic_signing_keys");
    }
    Json key = Json::object();
    for (int column = 0; column < 6; ++column) {
      key[kSigningKeyColumns[column]] = column_json(stmt->get(), column);
    }
    keys.push_back(std::move(key));
  }
}

// Makes the topic's stored keys exactly `keys` (none when it is no array).
Status write_signing_keys(sqlite3* db, const std::string& topic, const Json& keys) {
  auto removed = prepare_raw(db, "DELETE FROM topic_signing_keys WHERE topic = ?1");
  if (!removed.is_ok()) {
    return removed.status();
  }
  bind_json(removed->get(), 1, Json(topic));
  Status status = step_done(db, removed->get(), "cannot delete signing keys of " + topic);
  if (!status.is_ok() || !keys.is_array()) {
    return status;
  }
  for (const Json& key : keys) {
    if (!key.is_object()) {
      continue;
    }
    auto stmt = prepare_raw(db,
                            "INSERT INTO topic_signing_keys (topic, key_id, kind, secret, "
                            "public_key, created_at_ms, retires_at_ms) VALUES (?1, ?2, ?3, ?4, "
                            "?5, ?6, ?7)");
    if (!stmt.is_ok()) {
      return stmt.status();
    }
    bind_json(stmt->get(), 1, Json(topic));
    for (int column = 0; column < 6; ++column) {
      bind_json(stmt->get(), column + 2, key.value(kSigningKeyColumns[column], Json()));
    }
    status = step_done(db, stmt->get(), "cannot write a signing key of " + topic);
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

bool is_topic(const RegistryKind& kind) { return std::string(kind.kind) == "topic"; }

Status delete_row(sqlite3* db, const RegistryKind& kind, const std::string& name) {
  std::vector<std::string> sql = {std::string("DELETE FROM ") + kind.table + " WHERE " +
                                  sql_name(kind.key) + " = ?1"};
  if (std::string(kind.kind) == "admin_user") {
    sql.push_back("DELETE FROM admin_sessions WHERE user = ?1");  // as AdminUsers::remove
  }
  if (is_topic(kind)) {
    sql.push_back("DELETE FROM topic_signing_keys WHERE topic = ?1");  // as delete_topic
    sql.push_back("DELETE FROM topic_schedules WHERE topic = ?1");
  }
  for (const std::string& text : sql) {
    auto stmt = prepare_raw(db, text);
    if (!stmt.is_ok()) {
      return stmt.status();
    }
    bind_json(stmt->get(), 1, Json(name));
    Status status = step_done(db, stmt->get(), "cannot delete " + std::string(kind.kind));
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

}  // namespace

const std::vector<RegistryKind>& registry_kinds() {
  static const std::vector<RegistryKind> kinds = {
      {"topic", "topics", "name"},           {"api_token", "api_tokens", "name"},
      {"admin_user", "admin_users", "name"}, {"alert_settings", "alert_settings", nullptr},
      {"shard", "shards", "address"},
  };
  return kinds;
}

const RegistryKind* find_registry_kind(const std::string& kind) {
  for (const RegistryKind& candidate : registry_kinds()) {
    if (kind == candidate.kind) {
      return &candidate;
    }
  }
  return nullptr;
}

Result<std::optional<Json>> read_registry_row(sqlite3* db, const RegistryKind& kind,
                                              const std::string& name) {
  bool whole = kind.key == nullptr;
  auto stmt = prepare_raw(db, whole ? std::string("SELECT key, value FROM ") + kind.table
                                    : std::string("SELECT * FROM ") + kind.table + " WHERE " +
                                          sql_name(kind.key) + " = ?1");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  if (!whole) {
    bind_json(stmt->get(), 1, Json(name));
  }
  Json row = Json::object();
  for (;;) {
    int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) {
      break;
    }
    if (rc != SQLITE_ROW) {
      return sqlite_status(db, rc, std::string("cannot read ") + kind.table);
    }
    if (whole) {
      row[column_json(stmt->get(), 0).get<std::string>()] = column_json(stmt->get(), 1);
      continue;
    }
    for (int column = 0; column < sqlite3_column_count(stmt->get()); ++column) {
      row[sqlite3_column_name(stmt->get(), column)] = column_json(stmt->get(), column);
    }
    if (is_topic(kind)) {
      auto keys = read_signing_keys(db, name);
      if (!keys.is_ok()) {
        return keys.status();
      }
      row["signing_keys"] = std::move(*keys);
      auto schedules = read_schedules_row(db, name);
      if (!schedules.is_ok()) {
        return schedules.status();
      }
      row["schedules"] = std::move(*schedules);
    }
    return std::optional<Json>(std::move(row));
  }
  if (whole) {
    return std::optional<Json>(std::move(row));  // the settings always exist, maybe empty
  }
  return std::optional<Json>();
}

Result<std::vector<std::string>> registry_names(sqlite3* db, const RegistryKind& kind) {
  if (kind.key == nullptr) {
    return std::vector<std::string>{"all"};
  }
  auto stmt = prepare_raw(db, std::string("SELECT ") + sql_name(kind.key) + " FROM " + kind.table);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  std::vector<std::string> names;
  for (;;) {
    int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) {
      return names;
    }
    if (rc != SQLITE_ROW) {
      return sqlite_status(db, rc, std::string("cannot read ") + kind.table);
    }
    names.push_back(column_json(stmt->get(), 0).get<std::string>());
  }
}

Status write_registry_row(sqlite3* db, const RegistryKind& kind, const std::string& name,
                          const std::optional<Json>& row) {
  if (kind.key == nullptr) {
    return write_settings(db, kind, row);
  }
  if (!row) {
    return delete_row(db, kind, name);
  }
  auto columns = table_columns(db, kind.table);
  if (!columns.is_ok()) {
    return columns.status();
  }
  std::vector<std::string> names;
  for (const auto& item : row->items()) {
    if (item.key() != kind.key && columns->count(item.key()) > 0) {
      names.push_back(item.key());
    }
  }
  std::string sql = std::string("INSERT INTO ") + kind.table + " (" + sql_name(kind.key);
  std::string values = "?1";
  std::string updates;
  for (size_t i = 0; i < names.size(); ++i) {
    sql += ", " + sql_name(names[i]);
    values += ", ?" + std::to_string(i + 2);
    updates += (i == 0 ? "" : ", ") + sql_name(names[i]) + " = excluded." + sql_name(names[i]);
  }
  sql += ") VALUES (" + values + ") ON CONFLICT(" + sql_name(kind.key) + ") DO " +
         (updates.empty() ? std::string("NOTHING") : "UPDATE SET " + updates);
  auto stmt = prepare_raw(db, sql);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  bind_json(stmt->get(), 1, Json(name));
  for (size_t i = 0; i < names.size(); ++i) {
    bind_json(stmt->get(), static_cast<int>(i + 2), (*row)[names[i]]);
  }
  Status status = step_done(db, stmt->get(), std::string("cannot write ") + kind.kind + " " + name);
  // A row from a host that does not carry keys yet leaves this host's alone.
  if (status.is_ok() && is_topic(kind) && row->contains("signing_keys")) {
    status = write_signing_keys(db, name, (*row)["signing_keys"]);
  }
  // Likewise a row from a host that does not carry schedules yet.
  if (status.is_ok() && is_topic(kind) && row->contains("schedules")) {
    status = write_schedules_row(db, name, (*row)["schedules"]);
  }
  return status;
}

std::string registry_row_hash(const Json& row) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : row.dump()) {
    hash = (hash ^ c) * 1099511628211ULL;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace dq

// The objects the shared registry carries, as rows of this host's SQLite
// copy: topics, API tokens, admin users, registry shards (one row each, by
// name) and the alert settings (the whole table, one object named "all"). An object
// travels as a JSON object of its row, column by column, read from and
// written to whatever columns the local table has: a column another
// migration adds flows between hosts with no change here, and a secret is
// carried as the registry stores it (hashes), never anything else. A topic's
// row also carries its signing keys (table topic_signing_keys) as the member
// "signing_keys", secrets as stored: every host signs its callbacks alike;
// and its schedules (table topic_schedules) as the member "schedules".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/sqlite_db.h"

namespace dq {

struct RegistryKind {
  const char* kind;   // "topic", "api_token", "admin_user", "alert_settings", "shard"
  const char* table;  // its SQLite table
  const char* key;    // the name column; nullptr: the whole table is one object
};

const std::vector<RegistryKind>& registry_kinds();
const RegistryKind* find_registry_kind(const std::string& kind);

// The object's row as JSON; nullopt when this copy does not hold it.
Result<std::optional<Json>> read_registry_row(sqlite3* db, const RegistryKind& kind,
                                              const std::string& name);
// Every name of the kind this copy holds.
Result<std::vector<std::string>> registry_names(sqlite3* db, const RegistryKind& kind);
// Writes the row (insert or update of the columns both it and the table
// have) or, with nullopt, deletes the object (an admin user's sessions too).
// The caller holds a transaction.
Status write_registry_row(sqlite3* db, const RegistryKind& kind, const std::string& name,
                          const std::optional<Json>& row);
// A short stable hash of a row (FNV-1a of its JSON text), to notice a change.
std::string registry_row_hash(const Json& row);

}  // namespace dq

// This host's copy of the registry (its SQLite file) as the shared registry
// sees it: the version of each object (table registry_versions), the last
// change of the shared copy applied here, and the two ways an object is
// written: applying a record of the shared copy, and a versioned write made
// here (a change checked against the version its writer read).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry_rows.h"

namespace dq {

// Marks a version that is a tombstone: the object was deleted at it.
inline constexpr const char* kDeletedHash = "deleted";

// One object as the shared copy holds it; row nullopt: deleted at version.
struct RegistryRecord {
  std::string kind;
  std::string name;
  int64_t version = 0;
  std::optional<Json> row;
};

struct LocalVersion {
  int64_t version = 0;   // 0: never versioned here
  std::string row_hash;  // of the row as last versioned, or kDeletedHash
};

Result<LocalVersion> local_version(sqlite3* db, const std::string& kind, const std::string& name);
// Every versioned object of the kind, by name.
Result<std::map<std::string, LocalVersion>> local_versions(sqlite3* db, const std::string& kind);
Status set_local_version(sqlite3* db, const std::string& kind, const std::string& name,
                         const LocalVersion& version);

// The message of a refused stale write: what was read, what is there now.
std::string version_conflict_message(const std::string& kind, const std::string& name, int64_t read,
                                     int64_t now);

Status forget_version(sqlite3* db, const std::string& kind, const std::string& name);

// The last change number of the shared copy applied here (0: none yet).
Result<int64_t> seen_change(sqlite3* db);
Status set_seen_change(sqlite3* db, int64_t change);
// Forgets every version and the seen change (the shared copy was emptied):
// the next sync publishes this copy again.
Status forget_versions(sqlite3* db);

// Writes a record of the shared copy here unless this copy already has its
// version or a newer one; true when it wrote. The caller holds a transaction.
Result<bool> apply_registry_record(sqlite3* db, const RegistryRecord& record);

// Runs change() in a transaction that is then rolled back, and returns the
// object's row as change() left it: what the write would store, to offer the
// shared copy before anything is written here. change()'s own failure
// (invalid, not found) is returned as it is.
Result<std::optional<Json>> preview_registry_row(sqlite3* db, const RegistryKind& kind,
                                                 const std::string& name,
                                                 const std::function<Status()>& change);

// A write on a host that does not share its registry: in one transaction,
// kConflict unless the object's version is `expected` (nullopt: any), then
// change() and the version + 1. Returns the new version.
Result<int64_t> local_versioned_write(sqlite3* db, const RegistryKind& kind,
                                      const std::string& name, std::optional<int64_t> expected,
                                      const std::function<Status()>& change);

}  // namespace dq

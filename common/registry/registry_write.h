// One versioned write of a registry object (a topic's add, edit or delete),
// the one path dqctl and dq-admin take. Shared ([registry] shared = yes):
// the change is first tried on this host's SQLite in a transaction that is
// rolled back, to learn the row it makes; that row is offered to the shared
// copy with the version the writer read (registry_put.lua); only when the
// shared copy took it is it written here, at the version the shared copy
// gave. A stale version is kConflict (409) and changes nothing; a shard
// that does not answer is kUnavailable (503, nothing written) or kUnknown
// (504: the shared copy may hold it; the sync brings it here if so).
// Not shared: the same version check in one SQLite transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/core/status.h"
#include "common/registry/registry_rows.h"
#include "common/registry/shared_registry.h"
#include "common/store/shard_set.h"

namespace dq {

struct ObjectWrite {
  const RegistryKind* kind = nullptr;
  std::string name;
  PutMode mode = PutMode::kUpdate;  // kCreate, kUpdate or kDelete
  // The version the writer read; nullopt: this copy's version (an update)
  // or any version (a delete).
  std::optional<int64_t> expected;
  // The change on this host's SQLite (the registry's own connection): it
  // validates, and answers kNotFound / kConflict / kInvalid as it does today.
  std::function<Status()> change;
};

// Blocking (dqctl). shared == nullptr: the registry is not shared. Returns
// the object's new version.
Result<int64_t> write_registry_object(sqlite3* db, SharedRegistry* shared,
                                      const ObjectWrite& write);

// The same on an event loop (dq-admin): the shared copy is asked through
// `shards` (shard 0, the first of [redis] shards) without blocking the loop.
void write_registry_object_async(sqlite3* db, const ShardSet& shards, const ObjectWrite& write,
                                 std::function<void(Result<int64_t>)> done);

}  // namespace dq

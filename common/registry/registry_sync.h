// RegistrySync: keeps this host's SQLite copy and the shared registry
// (common/registry/shared_registry.h) the same. Each turn
// - pulls: the objects the shared copy changed after the last change applied
//   here, written here in one transaction per batch with that change number
//   (so a restart goes on where it stopped, and an empty SQLite file imports
//   everything);
// - pushes: what was written here without the shared copy (a host's
//   registry from before it shared, the first admin user, API tokens and
//   alert settings written by dqctl or the admin page, an older dqctl): an
//   object never versioned is published unless the shared copy has it or
//   deleted it; a changed or deleted one is offered at the version it had.
//   The shared copy wins a refusal: its state is written here, and a
//   warning logged.
// A copy that never synced (no change applied yet) first forgets its
// versions: they were counted while it did not share.
// A shared copy whose change counter is behind the one applied here was
// emptied or replaced: every version here is forgotten and this copy is
// published again. dq-redis-checker runs turn() every 250 ms.
#pragma once

#include <cstdint>
#include <string>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/registry/shared_registry.h"
#include "common/registry/sqlite_db.h"

namespace dq {

class RegistrySync {
 public:
  explicit RegistrySync(const Config& config);

  Status turn();
  int64_t applied() const { return applied_; }  // records written here so far

 private:
  Status open();
  Status pull();
  Status push();
  Status push_kind(const RegistryKind& kind);
  Status offer(const PutRequest& request);

  std::string path_;
  SqliteHandle db_;
  SharedRegistry shared_;
  int64_t pushed_at_data_version_ = -1;
  bool checked_first_ = false;  // the first pull looked for a copy that never synced
  int64_t applied_ = 0;
};

}  // namespace dq

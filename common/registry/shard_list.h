// The shard list every role uses: the config file's [redis] shards, then the
// registry's shards (table shards, shared between hosts as registry kind
// "shard" when [registry] shared = yes) that are not in the file. A registry
// shard is active (new jobs are placed on it) or draining; a removed shard
// is a deleted row. The master reads this list at start and every second,
// and reloads its children when it changes (docs/decisions.md, "Shards
// from the registry").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/shard.h"
#include "common/core/status.h"
#include "common/registry/sqlite_db.h"

namespace dq {

struct RegistryShard {
  std::string address;  // host:port
  std::string password;
  std::string state;  // "active", "draining"; "listed": from before shards took jobs, unused
  int64_t created_at_ms = 0;
};

// Every shard of the registry's table, oldest first.
Result<std::vector<RegistryShard>> read_registry_shards(sqlite3* db);
// The same from the registry file at `sqlite_path` (not migrated here: a
// file without the table answers an error).
Result<std::vector<RegistryShard>> read_registry_shards(const std::string& sqlite_path);

// A shard added to the registry is first only asked (whether it holds an
// id) and read, for this long after it was added, and then also given new
// jobs: by then every host has reloaded with it, so no host places a job on
// it that another host's add of the same id would not see.
inline constexpr int64_t kShardJoinMs = 3000;

// `file` (the config file's shards), then each registry shard not in it
// that is active or draining.
std::vector<ShardAddress> merged_shards(const std::vector<ShardAddress>& file,
                                        const std::vector<RegistryShard>& registry);

// config->shards (the config file's) merged with the registry's, and
// config->no_new_jobs: the registry shards draining, or added less than
// kShardJoinMs before now_ms.
void apply_registry_shards(const std::vector<RegistryShard>& registry, int64_t now_ms,
                           Config* config);

// apply_registry_shards with the registry at config->sqlite_path, now. On
// failure config is left as it is.
Status merge_registry_shards(Config* config);

// The registry shard's state as shown: "joining" (not yet given new jobs),
// "active" or "draining".
std::string shown_state(const RegistryShard& shard, int64_t now_ms);

// Whether `address` may be added to the registry: host:port, no password
// with a comma or line break, not in [redis] shards of `config`. kInvalid
// or kConflict with a message saying why.
Status check_new_shard(const Config& config, const std::string& address,
                       const std::string& password);

// Sets a registry shard's state ("active" or "draining"); kNotFound when
// the registry does not list it. The change of a versioned write.
Status set_registry_shard_state(sqlite3* db, const std::string& address, const std::string& state);

// Asks the shard whether it can take jobs: kUnavailable when it cannot be
// reached, kInvalid when it could silently drop jobs (no persistence,
// eviction) unless [redis] allow_unsafe; each message says how to fix it.
Status check_shard_usable(const Config& config, const ShardAddress& shard);

// The jobs the shard holds, every topic and state (the sum of {dq}:counts;
// with none, the moves off it that have not ended, {dq}:moving).
Result<int64_t> jobs_on_shard(const Config& config, const ShardAddress& shard);
// The jobs moved off the shard to the others while it drained
// (checker/shard_mover.h), since it was first drained.
Result<int64_t> jobs_moved_off(const Config& config, const ShardAddress& shard);

// How long a shard must have been draining before it may be removed. Every
// host learns of a drain within a few seconds (the shared registry's refresh,
// then its master's reload); until then a host may still place a new job on
// the shard, which the mover then moves too. An empty shard removed before
// that could receive a job no host would deliver.
constexpr int64_t kDrainSettleMs = 10000;

// Ok when a mover first saw the shard draining at least kDrainSettleMs ago
// (Redis's clock, {dq}:draining_since); else kConflict saying how long to wait.
Status drain_settled(const Config& config, const ShardAddress& shard);

}  // namespace dq

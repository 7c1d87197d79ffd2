// The shard list every role uses: the config file's [redis] shards, then the
// registry's shards (table shards, shared between hosts as registry kind
// "shard" when [registry] shared = yes) that are not in the file, and the
// role each has in placement (common/core/shard.h, ShardRole). A registry
// row is "moving" (added: joining, then moving in), "active", "draining"
// (leaving, then draining) or "drained"; a removed shard is a deleted row.
// A config-file shard has a row once it is drained, and is active without
// one. The master reads this list at start and every second, and reloads
// its children when it changes (docs/decisions.md, "Shards from the
// registry", "One home per id").
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
  // "moving", "active", "draining", "drained"; "listed": from before shards
  // took jobs, unused
  std::string state;
  int64_t created_at_ms = 0;
  int64_t changed_at_ms = 0;  // when the state was set (the writing host's clock)
};

// Every shard of the registry's table, oldest first.
Result<std::vector<RegistryShard>> read_registry_shards(sqlite3* db);
// The same from the registry file at `sqlite_path` (not migrated here: a
// file without the table answers an error).
Result<std::vector<RegistryShard>> read_registry_shards(const std::string& sqlite_path);

// The row of `address`, or nullptr.
const RegistryShard* find_registry_shard(const std::vector<RegistryShard>& rows,
                                         const std::string& address);
// Whether `address` is one of the config file's own shards (Config::file_shards).
bool in_config_file(const Config& config, const std::string& address);

// A shard added (or drained) is first joining (or leaving) for this long
// after its state was set: asked as the next home of its ids, while the
// ids' homes stay as they were. By then every host has reloaded with the
// change (hosts see it up to ~1.5 s apart, and a reload runs two
// generations 300 ms side by side), so no host still placing an id on its
// old home can meet one that already places it on the new one
// (common/store/placement.h).
inline constexpr int64_t kShardJoinMs = 3000;

// `file` (the config file's shards), then each registry shard not in it
// that is moving, active, draining or drained.
std::vector<ShardAddress> merged_shards(const std::vector<ShardAddress>& file,
                                        const std::vector<RegistryShard>& registry);

// The shard's role in placement at now_ms: a "moving" row is joining for
// kShardJoinMs after changed_at_ms, then moving in; a "draining" one
// leaving, then draining.
ShardRole shard_role(const RegistryShard& shard, int64_t now_ms);

// config->shards (the config file's) merged with the registry's,
// config->shard_roles from the registry's rows (a config-file shard's
// too), and config->file_shards.
void apply_registry_shards(const std::vector<RegistryShard>& registry, int64_t now_ms,
                           Config* config);

// apply_registry_shards with the registry at config->sqlite_path, now. On
// failure config is left as it is.
Status merge_registry_shards(Config* config);

// The shard's state as shown: "joining", "moving" (taking new jobs, its ids'
// jobs being moved to it), "active", "draining" or "drained".
std::string shown_state(const RegistryShard& shard, int64_t now_ms);

// Whether `address` may be added to the registry: host:port, no password
// with a comma or line break, not in [redis] shards of `config`. kInvalid
// or kConflict with a message saying why.
Status check_new_shard(const Config& config, const std::string& address,
                       const std::string& password);

// Sets a registry shard's state ("moving", "active", "draining" or
// "drained") and its changed_at_ms to now; kNotFound when the registry does
// not list it. The change of a versioned write.
Status set_registry_shard_state(sqlite3* db, const std::string& address, const std::string& state);

// Asks the shard whether it can take jobs: kUnavailable when it cannot be
// reached, kInvalid when it could silently drop jobs (no persistence,
// eviction) unless [redis] allow_unsafe; each message says how to fix it.
Status check_shard_usable(const Config& config, const ShardAddress& shard);

// The jobs the shard holds, every topic and state (the sum of {dq}:counts;
// with none, the moves off it that have not ended, {dq}:moving, then the
// jobs registered there as waited for, {dq}:awaited, the dependency events
// not handed out, {dq}:depout, and the dead-letter callbacks not sent,
// {dq}:deadcb): while it is above 0 the shard is not drained nor removed.
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

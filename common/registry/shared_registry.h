// The shared registry: one copy of the registry's objects (topics, API
// tokens, admin users, alert settings) for every host on the same Redis
// shards, kept on the first shard of [redis] shards when [registry] shared =
// yes (docs/registry.md, *One registry for every host*). Each object is a
// versioned record changed only by registry_put.lua (compare-and-set on the
// version); every change takes the next number of a change counter, and a
// log zset maps each object to the number of its last change, so a host
// pulls what changed after the last number it applied (registry_changes.lua).
// A deleted object keeps its version (a tombstone), so a stale edit of it is
// refused instead of bringing it back.
//
// Keys: {dq}:registry:v:KIND (hash name -> version), {dq}:registry:row:KIND
// (hash name -> row JSON, common/registry/registry_rows.h),
// {dq}:registry:changes (counter), {dq}:registry:log (zset).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/redis/redis_sync.h"
#include "common/redis/script_call.h"
#include "common/registry/registry_copy.h"

namespace dq {

enum class PutMode { kCreate, kPublish, kUpdate, kDelete };

struct PutRequest {
  std::string kind;
  std::string name;
  PutMode mode = PutMode::kCreate;
  std::optional<int64_t> expected;  // update: required; delete: nullopt takes any version
  std::optional<Json> row;          // create, publish, update
};

struct PutAnswer {
  bool ok = false;
  // ok: "", else exists, deleted, missing or conflict
  std::string refusal;
  // ok: the object as written (its new version); refused: as the copy holds it
  RegistryRecord now;
};

ScriptCall registry_put_call(const PutRequest& request);
Result<PutAnswer> parse_put_reply(const PutRequest& request, const redisReply* reply);
// What a refused put means to its writer: kConflict (a stale version, or a
// name that exists) or kNotFound, with a message saying which.
Status put_refusal_status(const PutRequest& request, const PutAnswer& answer);

struct ChangeBatch {
  int64_t counter = 0;  // the shared copy's change counter now
  int64_t last = 0;     // the change number of the last record (0: none)
  std::vector<RegistryRecord> records;
};

ScriptCall registry_changes_call(int64_t after, int limit);
Result<ChangeBatch> parse_changes_reply(const redisReply* reply);

// The shard holding the shared copy: the first of [redis] shards.
ShardAddress shared_registry_shard(const Config& config);
// A failed call to that shard, its message naming the shard; the code kept
// (kUnavailable: nothing written, 503; kUnknown: may have been, 504).
Status shared_registry_failure(const std::string& shard, const Status& status);

// Blocking access to the shared copy (dqctl, the sync of dq-redis-checker).
class SharedRegistry {
 public:
  explicit SharedRegistry(const Config& config);

  const std::string& shard_name() const { return shard_name_; }
  Result<PutAnswer> put(const PutRequest& request);
  Result<ChangeBatch> changes(int64_t after, int limit);

 private:
  std::string shard_name_;
  RedisConnection connection_;
};

}  // namespace dq

// The operator's shard changes, one implementation for `dqctl shard` and the
// admin page's Shards page: each checks the change, then hands back the
// versioned registry write that makes it (common/registry/registry_write.h),
// which the caller runs its own way (blocking in dqctl, on the event loop in
// dq-admin). Every host's master reloads with the change within seconds
// (common/registry/shard_list.h); the checker's mover then moves the jobs
// whose home changed and ends the change (settle_shard_change).
//
// One change at a time: a shard is added or drained only while no other is
// moving in or draining, so an id is looked for on two shards at most
// (common/store/placement.h).
#pragma once

#include <string>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/registry/registry.h"
#include "common/registry/registry_write.h"

namespace dq {

struct ShardEdit {
  ObjectWrite write;
  std::string address;
  std::string state;       // the shard's state once written; "" when removed
  bool unchanged = false;  // already in that state: nothing to write
};

// `config`: the running (merged) config; its Redis timeouts bound the
// shard's checks. Refusals: kInvalid (a bad address or password, or a
// shard that could silently drop jobs), kConflict (listed already, another
// change under way, not drained, still holds jobs), kNotFound, kUnavailable
// (the shard cannot be asked).
//
// Add: a host:port shard that answers and keeps its data, as "moving".
Result<ShardEdit> plan_shard_add(const Config& config, Registry& registry,
                                 const std::string& address, const std::string& password);
// Drain: any listed host:port shard, from the registry or the config file
// (a config-file shard gets a row; it stays drained until it is removed
// from the file), as "draining".
Result<ShardEdit> plan_shard_drain(const Config& config, Registry& registry,
                                   const std::string& address);
// Remove: a shard that drained long enough and holds no job, and is in no
// config file (this host's is checked).
Result<ShardEdit> plan_shard_remove(const Config& config, Registry& registry,
                                    const std::string& address);

// The checker's end of a change: the shard's state from `from` to `to`
// ("moving" -> "active", "draining" -> "drained"), unless someone changed
// it meanwhile. Blocking: this host's registry, and the shared copy when
// [registry] shared = yes.
Status settle_shard_change(const Config& config, const std::string& address,
                           const std::string& from, const std::string& to);

}  // namespace dq

// One home per (topic, id) (docs/decisions.md, "One home per id"): the rule
// the one job store (common/store/async_job_store.h), the checker's mover
// (checker/shard_mover.h) and the store upgrade share.
//
// An id's home is the first shard in its rendezvous order (shard_order) that
// takes new jobs (active, moving in or leaving); of a Redis Cluster's virtual
// shards each key ranks one. An add, get or delete asks the home alone,
// except while one shard joins or drains. Then one more shard may hold the
// id, and is asked too:
// - its previous home (a shard moving in is its home now, or its home is
//   draining): a job added before the change is there until the checker
//   moves it home. An add's look there also fences it
//   (common/store/fence.h): that shard then refuses a write of an
//   id whose next home is this add's home, so a host that sees the change a
//   second later cannot place the id there any more;
// - its next home (a shard joins, or its home is leaving): a host that saw
//   the change first may have placed the id there. The add carries that
//   name, and its home refuses it once fenced (add.lua).
// So two hosts that see a change a second apart never both place an id.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/config.h"
#include "common/core/shard.h"
#include "common/core/status.h"
#include "common/store/job.h"

namespace dq {

struct IdHomes {
  size_t home = 0;                 // where an add writes
  std::optional<size_t> previous;  // asked too; fenced by an add's look
  std::optional<size_t> next;      // asked too; named in the add
  // home, then previous and next when set (one of them while one shard
  // changes at a time).
  std::vector<size_t> asked() const;
  // The order a get, delete or release asks the shards in: the previous
  // home first (a job moving home is written on its home before it leaves
  // the previous one: common/store/job_mover.h), then the home, then the
  // next home.
  std::vector<size_t> lookup_order() const;
};

// The part of a job key its homes are chosen by: the whole key, except that
// a schedule's tick ("topic:schedule:<schedule id>:<tick>") is placed by
// "topic:schedule:<schedule id>", so every tick lives with the schedule's
// next tick (common/store/schedule_ticks.h).
std::string_view placement_key(std::string_view job_key);

// The homes of job_key (by its placement_key) over `shards` with their roles (parallel); nullopt
// when no shard takes new jobs.
std::optional<IdHomes> id_homes(const std::vector<ShardAddress>& shards,
                                const std::vector<ShardRole>& roles, std::string_view job_key);

// The role of each of config.shards (Config::shard_roles; absent: active).
std::vector<ShardRole> roles_of(const Config& config);
// Active, moving in or leaving: a home for the ids it ranks first for.
bool takes_new_jobs(ShardRole role);

// What an add did.
struct Added {
  int64_t due_ms = 0;
  // The same id with the same body was pending already, or ended (below)
  // within its topic's dedup window: a retried add, nothing changed.
  bool existing = false;
  // When it ended: "delivered" or "dead", and when (Redis ms);
  // "" and 0 while it is pending.
  std::string ended;
  int64_t ended_at_ms = 0;
  // It waits for jobs its "after" named (state waiting).
  bool waiting = false;
};

// Reads the reply add.lua gave job `index` of its call: Added, kConflict
// with a message, or kUnavailable when its shard was fenced for the id's
// next home (nothing written: the add is retried once this host reloads).
Result<Added> read_add_reply(const redisReply* reply, size_t index, const std::string& topic,
                             const std::string& id);

// The id was found on its other home (previous or next): with the same
// body, the add is answered as existing (a retry); dead or another body is
// a conflict. stored_body is the body that shard holds (inline in its
// record, or from {dq}:bodies), nullopt when it holds none.
Result<Added> read_copy_elsewhere(const Job& found, std::optional<std::string_view> stored_body,
                                  const std::string& body, const std::string& shard_name);

std::string conflict_message(const std::string& topic, const std::string& id, JobState state);

// A read or write error that means "this shard could not be asked".
bool is_unreachable(const Status& status);

std::vector<std::string> shard_names(const std::vector<ShardAddress>& shards);

}  // namespace dq

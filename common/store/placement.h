// The rules that keep one copy of a (topic, id) across shards, whatever is
// unreachable (docs/decisions.md, "One copy per id"), applied by the one job
// store (common/store/async_job_store.h).
//
// Add: the job goes to the first reachable shard in its placement order. Every
// other reachable shard is asked first whether it holds the id. A shard ranked
// before the target that could not be asked may hold it: the new copy is then
// held (not delivered) until that shard has been asked (timer/held_verifier).
// An add whose copy is held, new or retried, is answered kUnknown (504): that
// shard may hold the id with another body, and then the held copy is dropped,
// so no 2xx is given before it has been asked.
// Delete: every reachable shard deletes its copy. 204 needs a copy that was
// not held, or every shard asked; else 503 and nothing changes.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/shard.h"
#include "common/core/status.h"
#include "common/store/job.h"

namespace dq {

struct AddPlan {
  std::optional<size_t> target;             // first reachable shard in the order
  std::vector<std::string> verify_against;  // unreachable shards ranked before it
  std::vector<std::string> unreachable;     // every unreachable shard
};

AddPlan plan_add(const std::vector<ShardAddress>& shards, const std::vector<size_t>& order,
                 const std::vector<bool>& reachable);
// The same where a shard with placing[i] false (joining or draining) is never
// the target, and, when unreachable, is verified against wherever it ranks:
// it may hold the id (draining: its old jobs; joining: a host that already
// places on it).
AddPlan plan_add(const std::vector<ShardAddress>& shards, const std::vector<size_t>& order,
                 const std::vector<bool>& reachable, const std::vector<bool>& placing);

// What an add did.
struct Added {
  int64_t due_ms = 0;
  bool existing = false;  // the same id with the same body was held already
};

// Reads the reply add.lua gave job `index` of its call: Added, kConflict
// with a message, or kUnknown when the copy is held.
Result<Added> read_add_reply(const redisReply* reply, size_t index, const std::string& topic,
                             const std::string& id);

// Another shard holds the id: with the same body, the add is answered as
// existing (a retry), or kUnknown while that copy is held; dead or another
// body is a conflict. stored_body is the
// body that shard holds (inline in its record, or from {dq}:bodies), nullopt
// when it holds none.
Result<Added> read_copy_elsewhere(const Job& held, std::optional<std::string_view> stored_body,
                                  const std::string& body, const std::string& shard_name);

std::string conflict_message(const std::string& topic, const std::string& id, JobState state);

// Lookup result of a delete: which shards hold a copy, and in what state.
struct CopySeen {
  size_t shard = 0;
  JobState state = JobState::kDelayed;
};

// kOk: delete those copies and answer 204 (tomb: leave tombstones, as a
// shard was not asked). kNotFound / kUnavailable: answer that, change nothing.
struct DeletePlan {
  Status verdict;
  bool tomb = false;
};
DeletePlan plan_delete(const std::vector<CopySeen>& copies,
                       const std::vector<std::string>& unreachable, const std::string& topic,
                       const std::string& id);

// A read or write error that means "this shard could not be asked".
bool is_unreachable(const Status& status);

std::vector<std::string> shard_names(const std::vector<ShardAddress>& shards);

}  // namespace dq

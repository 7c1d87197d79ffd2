// The calls that move a draining shard's jobs to the other shards
// (common/store/lua/move_*.lua; the mover is checker/shard_mover.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/redis/script_call.h"

namespace dq {

// A job move_mark.lua marked on its source, as it answered it.
struct MarkedJob {
  std::string key;
  std::string target;  // shard name
  std::string record;  // as the source holds it
  std::string body;    // when not inline in the record
  std::string error;   // last error, or ""
  std::string dead_score;
};

// pairs: job key and its target shard's name.
ScriptCall move_mark_call(const std::vector<std::pair<std::string, std::string>>& pairs);
ScriptCall move_in_call(const MarkedJob& job, const std::string& source);
// undo: the target refused it; it goes back into its state on the source.
ScriptCall move_done_call(const std::string& key, bool undo);
ScriptCall move_lease_call(const std::string& holder, int64_t lease_ms);

}  // namespace dq

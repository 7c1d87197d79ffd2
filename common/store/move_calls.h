// The calls that move jobs to their home shard (common/store/lua/move_*.lua;
// common/store/job_mover.h runs them for checker/shard_mover.h and the store
// upgrade). Each takes a batch of jobs: one script per state change on each
// side.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/redis/script_call.h"

namespace dq {

// A job move_mark.lua marked on its source, as it answered it.
struct MarkedJob {
  std::string key;
  std::string target;  // shard name
  std::string record;  // as the source holds it; "" when deleted during the move
  std::string body;    // when not inline in the record
  std::string error;   // last error, or ""
  std::string dead_score;
  std::string created;  // the record's created time, kept on the target
  std::string after;    // a waiting job's remaining dependencies, '\n'-joined
  std::string waiters;  // the jobs registered on the source as waiting for it, '\n'-joined
};

// move_mark.lua's answer: nine strings per job, in MarkedJob's order.
std::vector<MarkedJob> marked_jobs_of(const redisReply* reply);

// The pending jobs of buckets first_bucket.. (about `most`): {next bucket
// or -1, key, due, ...}.
ScriptCall move_scan_call(uint32_t first_bucket, int most);
// pairs: job key and its target shard's name. A pending job due within
// margin_ms is not marked (nor answered).
ScriptCall move_mark_call(const std::vector<std::pair<std::string, std::string>>& pairs,
                          int64_t margin_ms);
// Jobs to write on one target shard.
ScriptCall move_in_call(const std::vector<const MarkedJob*>& jobs);
// pairs: job key and "done" or "undo" (the target refused it; it goes back
// into its state on the source).
ScriptCall move_done_call(const std::vector<std::pair<std::string, std::string>>& pairs);
// pairs: job key and its created time.
ScriptCall move_drop_call(const std::vector<std::pair<std::string, std::string>>& pairs);
// The registrations of awaited jobs that are not on the source
// (dep_carry_out.lua): keys, each one's home elsewhere; answers pairs of
// job key and its waiters.
ScriptCall dep_carry_out_call(const std::vector<std::string>& keys);
// pairs: job key and its waiters ('\n'-joined): registered on its home
// (dep_carry_in.lua), then ended on the source (dep_carry_done.lua).
ScriptCall dep_carry_in_call(const std::vector<std::pair<std::string, std::string>>& pairs);
ScriptCall dep_carry_done_call(const std::vector<std::pair<std::string, std::string>>& pairs);
// The ended records of jobs whose home is another shard (ended_carry_out.lua):
// job keys; answers triples of job key, ended record and time to live in
// ms ('' for none).
ScriptCall ended_carry_out_call(const std::vector<std::string>& keys);
// Those triples, written on the jobs' home unless it holds a later end
// (ended_carry_in.lua).
ScriptCall ended_carry_in_call(const std::vector<std::string>& triples);
// pairs: job key and the ended record carried: removed from the source
// unless it changed since (ended_carry_done.lua).
ScriptCall ended_carry_done_call(const std::vector<std::pair<std::string, std::string>>& pairs);
// How long a shard's draining-since time outlives the last mover pass: a
// shard drained again after this starts its settling time anew.
constexpr int64_t kDrainingSinceTtlMs = 15000;
// dead_holder: a holder known dead (this host, its pid gone), or "".
// draining: the shard drains (its draining-since time is kept), else it
// moves in.
ScriptCall move_lease_call(const std::string& holder, int64_t lease_ms,
                           const std::string& dead_holder, bool draining = true);

}  // namespace dq

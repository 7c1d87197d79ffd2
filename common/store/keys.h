// Redis key names of one shard. Every key carries the same hash tag, so each
// Lua script touches a single Redis Cluster slot. The layout is described in
// common/store/lua/lib/prelude.lua and docs/decisions.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dq::keys {

inline const std::string kPrefix = "{dq}:";

// Store v3: a pending (delayed or retrying) job's record sits in the bucket
// hash records(bucket_of(key)), field "topic:id"; the others in
// flat_records() (common/store/lua/lib/prelude.lua has the layout).
// 49,157 buckets: ~20 jobs each per million pending, ~200 at 10M. Under
// hash-max-listpack-entries 128 (what dq asks of a shard) a bucket is a
// listpack up to ~6M pending and a hashtable beyond. A prime: every byte counts.
constexpr uint32_t kBuckets = 49157;

// h = (h * 31 + byte) mod kBuckets over the key's bytes, as bucket_of() in
// the prelude computes it.
inline uint32_t bucket_of(std::string_view job_key) {
  uint64_t h = 0;
  for (unsigned char c : job_key) {
    h = (h * 31 + c) % kBuckets;
  }
  return static_cast<uint32_t>(h);
}
inline std::string records_prefix() { return kPrefix + "jobs:"; }
inline std::string records(uint32_t bucket) { return records_prefix() + std::to_string(bucket); }
inline std::string records_of(std::string_view job_key) { return records(bucket_of(job_key)); }
// zset: bucket -> the earliest due of its delayed and retrying jobs
inline std::string due_index() { return kPrefix + "due"; }
// zset per bucket: job key -> due, of its delayed and retrying jobs
inline std::string due_prefix() { return kPrefix + "due:"; }
inline std::string due(uint32_t bucket) { return due_prefix() + std::to_string(bucket); }
inline std::string bodies() { return kPrefix + "bodies"; }  // hash: job key -> big body bytes
// hash: job key -> record of a job in flight or dead (state r, w, x;
// pending ones are in buckets). Store v2 kept every record here, and its
// delayed jobs in the zset flat_delayed(), which store_upgrade.lua converts.
inline std::string flat_records() { return kPrefix + "jobs"; }
inline std::string flat_delayed() { return kPrefix + "delayed"; }
inline std::string working() { return kPrefix + "working"; }  // zset: lease deadline ms
inline std::string errors() { return kPrefix + "errors"; }    // hash: job key -> "ms|error"
inline std::string counts() { return kPrefix + "counts"; }    // hash: "topic:state" -> jobs
inline std::string seq() { return kPrefix + "seq"; }          // counter: incarnations
// A job that ended (delivered, dead, expired, deleted), remembered for its
// topic's dedup window and history: string "how|ended ms|due ms|body
// print|dedup until ms|attempts|detail" with that time to live (remember_end
// in common/store/lua/lib/prelude.lua; common/store/ended_job.h reads it).
inline std::string ended(std::string_view job_key) {
  return kPrefix + "ended:" + std::string(job_key);
}
// While the shard list changes: the names of the shards that now place ids
// this shard was the home of (zset: name -> when named, Redis ms;
// common/store/fence.h). add.lua refuses an id whose next home is named here.
inline std::string fence() { return kPrefix + "fence"; }
// Moving jobs to their home (checker/shard_mover.h): hash job key ->
// "target|dead score|created|flag" while a job is marked, the count of jobs
// moved off, and the mover's lease.
inline std::string moving() { return kPrefix + "moving"; }
inline std::string moved_out() { return kPrefix + "moved_out"; }
inline std::string mover_lease() { return kPrefix + "mover"; }
// When a mover first saw the shard draining (ms, Redis's clock); kept alive by
// every pass, so it ends soon after the shard stops draining.
inline std::string draining_since() { return kPrefix + "draining_since"; }
inline std::string ready_prefix() { return kPrefix + "ready:"; }
inline std::string ready(std::string_view topic) { return ready_prefix() + std::string(topic); }
inline std::string dead_prefix() { return kPrefix + "dead:"; }
inline std::string dead(std::string_view topic) { return dead_prefix() + std::string(topic); }
inline std::string lease(std::string_view reserve_id) {
  return kPrefix + "lease:" + std::string(reserve_id);
}
inline std::string cancel(std::string_view reserve_id) {
  return kPrefix + "cancel:" + std::string(reserve_id);
}
// Event counters "topic:event" (added, delivered, failed, dead, deleted,
// expired (a lease), requeued, updated, ttl_expired, late_dropped;
// duplicate: a held copy dropped, before store v4): per day (YYYYMMDD, 40 days),
// since the shard began (totals), and per minute of Redis's clock (unix minute, 2 hours).
inline std::string stats(std::string_view day) { return kPrefix + "stats:" + std::string(day); }
inline std::string totals() { return kPrefix + "totals"; }
inline std::string minute_prefix() { return kPrefix + "minute:"; }
inline std::string minute(int64_t unix_minute) {
  return minute_prefix() + std::to_string(unix_minute);
}
// A topic's caps (permit_lease.lua, docs/delivery.md "Caps per topic"), on
// its coordination shard (common/store/coordination_shard.h): each
// consumer's lease of permits (hash holder -> "count seq"), the leases'
// deadlines (zset holder -> deadline ms) and the rate's GCRA arrival time.
inline std::string permit_leases(std::string_view topic) {
  return kPrefix + "permit_leases:" + std::string(topic);
}
inline std::string permit_deadlines(std::string_view topic) {
  return kPrefix + "permit_deadlines:" + std::string(topic);
}
inline std::string rate(std::string_view topic) { return kPrefix + "rate:" + std::string(topic); }
// A pull topic's caps (pull_cap.lua, docs/delivery.md "Pull workers"), on its
// coordination shard: its jobs leased to workers (zset lease -> deadline ms)
// and its rate's GCRA arrival time.
inline std::string pull_leases(std::string_view topic) {
  return kPrefix + "pull_leases:" + std::string(topic);
}
inline std::string pull_rate(std::string_view topic) {
  return kPrefix + "pull_rate:" + std::string(topic);
}
// A schedule's next tick (string, epoch ms), on the schedule's home shard
// (common/store/schedule_ticks.h): moved on only by schedule_tick.lua.
inline std::string schedule_next(std::string_view schedule_id) {
  return kPrefix + "schedule:" + std::string(schedule_id);
}
inline std::string timer_wake() { return kPrefix + "wake:timer"; }
inline std::string consumer_wake() { return kPrefix + "wake:consumer"; }
// The dead-letter callback outbox (common/store/dead_callbacks.h): zset entry
// number -> when it is next to be sent; hash dead_callbacks() + ":" + number.
inline std::string dead_callbacks() { return kPrefix + "deadcb"; }
// Dependencies between jobs (common/store/dependencies.h; the layout is in
// common/store/lua/lib/prelude.lua): the awaited jobs, the outbox of their
// endings (zset event number -> when next handled), the releaser's wake
// list, a waiting job's remaining dependencies, its topic's waiting jobs
// (zset -> due) and the waiting jobs' expiries.
inline std::string awaited() { return kPrefix + "awaited"; }
inline std::string dep_outbox() { return kPrefix + "depout"; }
inline std::string dep_wake() { return kPrefix + "wake:deps"; }
inline std::string after() { return kPrefix + "after"; }
inline std::string waiting(std::string_view topic) {
  return kPrefix + "waiting:" + std::string(topic);
}
inline std::string waiting_expiry() { return kPrefix + "waiting_expiry"; }

}  // namespace dq::keys

// One builder per job transition: each returns the Lua script with the KEYS
// and ARGV it needs. The sync store (timer, consumer, dqctl) and the async
// API server run the very same calls, so the two can never disagree on keys.
// No builder takes a time: every script reads Redis's clock (TIME), so hosts
// whose clocks disagree cannot make a job due early.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/time_text.h"
#include "common/redis/script_call.h"
#include "common/store/job_expiry.h"
#include "common/store/job_results.h"
#include "common/store/lua_scripts.h"

namespace dq {

// One topic's part of a reserve call (see common/store/lua/reserve.lua).
struct ReserveSlot {
  // The common fields in order ({"orders", lease, share, cap, max}); the
  // others are set by name.
  ReserveSlot(std::string topic_name = "", int64_t lease = 0, int fair_share = 0, int most = 0,
              int attempts = 1)
      : topic(std::move(topic_name)),
        lease_ms(lease),
        share(fair_share),
        cap(most),
        max_attempts(attempts) {}

  std::string topic;
  int64_t lease_ms = 0;
  int share = 0;  // taken first
  int cap = 0;    // most, when the budget allows after every topic's share
  int max_attempts = 1;
  std::string end_memory;   // EndMemory::arg(): how its expired and late jobs are remembered
  std::string late_policy;  // LatePolicy::script_arg()
  bool dead_callback = false;
};

// Local calendar day "YYYYMMDD" of a time in ms: the stats hash of that day.
std::string day_of(int64_t ms);
// The stats hash of today (local calendar day).
std::string today_stats();

// next_home: the jobs' next home while the shard list changes, "" when
// none (common/store/placement.h); a shard fenced for it refuses them.
ScriptCall add_call(const std::string& topic, const std::string& id, const std::string& body,
                    DueTime due, const std::string& next_home = "");
// An add call for many jobs with the same next home (common/store/lua/add.lua
// takes any number): jobs are appended by append_add.
ScriptCall add_call_for(const std::string& next_home);
void append_add(ScriptCall* call, const std::string& topic, const std::string& id,
                const std::string& body, DueTime due, const JobExpiry& expiry = {},
                const std::string& after_keys = "");
// The jobs an add call carries.
size_t add_call_jobs(const ScriptCall& call);
// keep_ms > 0: the delete is remembered that long (the topic's history).
ScriptCall del_call(const std::string& topic, const std::string& id, int64_t keep_ms = 0);
// Makes a delayed or retrying job due now (common/store/lua/run_now.lua).
ScriptCall run_now_call(const std::string& topic, const std::string& id);
// Changes a pending job in place (common/store/lua/update.lua): body nullptr
// keeps the body, due nullopt keeps the due time.
ScriptCall update_call(const std::string& topic, const std::string& id, const std::string* body,
                       std::optional<DueTime> due, std::optional<JobExpiry> expiry = {});
// The pull topics as the scripts that make jobs ready take them ("|a|b|",
// "" for none): those publish on {dq}:ready when such a topic's jobs
// become ready (docs/delivery.md, "Pull workers").
std::string pull_topics_arg(const std::vector<std::string>& pull_topics);
ScriptCall promote_call(int limit, const std::vector<WindowHold>& holds,
                        const std::vector<std::string>& pull_topics = {});
// topics: those with a dead-letter callback (their jobs that die get an
// outbox entry: common/store/dead_callbacks.h) or an end memory other than
// default_memory, which the others' dead jobs are remembered for.
ScriptCall requeue_expired_call(int limit, const std::vector<ExpiryTopic>& topics = {},
                                const EndMemory& default_memory = {},
                                const std::vector<std::string>& pull_topics = {});
// forget_id: an earlier reserve whose reply arrived; its lease list is dropped.
ScriptCall reserve_call(const std::string& reserve_id, const std::vector<ReserveSlot>& slots,
                        int most_jobs, int64_t most_bytes, const std::string& forget_id = "");
ScriptCall release_call(const std::string& reserve_id,
                        const std::vector<std::string>& pull_topics = {});
// A pull topic's caps on its coordination shard (common/store/lua/pull_cap.lua):
// args from ARGV[1] on (the op first).
ScriptCall pull_cap_call(const std::string& topic, std::vector<std::string> args);
// Extends a pull worker's lease (common/store/lua/touch.lua).
ScriptCall touch_call(const std::string& topic, const std::string& id,
                      const std::string& incarnation, const std::string& reserve_id,
                      int64_t lease_ms);
// One delivery to ack: the job and the lease it was delivered under.
// Views of the caller's strings, valid until ack_call returns.
struct AckTarget {
  std::string_view topic;
  std::string_view id;
  std::string_view incarnation;
  std::string_view reserve_id;
  std::string_view end_memory;  // EndMemory::arg()
  std::string_view detail;      // delivery_detail()
  // A pull worker's ack: only the current lease counts (ack.lua).
  bool strict = false;
};
// Acks every target in one script run (common/store/lua/ack.lua), in order.
ScriptCall ack_call(const std::vector<AckTarget>& targets);
// Dead-letters the ready jobs of a held topic that waited longer than
// max_retry_ms (common/store/lua/expire_held.lua); replies their number.
ScriptCall expire_held_call(const std::string& topic, int64_t max_retry_ms,
                            const std::string& reason, bool dead_callback, const EndMemory& memory,
                            int limit);
ScriptCall fail_call(const std::string& topic, const std::string& id,
                     const std::string& incarnation, const std::string& reserve_id,
                     int64_t retry_delay_ms, int max_attempts, const std::string& error,
                     const FailDeferral& deferral = {});
// id empty: a batch of up to `limit` dead jobs of the topic.
ScriptCall dead_requeue_call(const std::string& topic, const std::string& id, int limit);
ScriptCall dead_purge_call(const std::string& topic, int limit);
}  // namespace dq

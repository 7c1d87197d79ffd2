// One builder per job transition: each returns the Lua script with the KEYS
// and ARGV it needs. The sync store (timer, consumer, dqctl) and the async
// API server run the very same calls, so the two can never disagree on keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/lua_scripts.h"

namespace dq {

struct ScriptCall {
  const LuaScript* script = nullptr;
  std::vector<std::string> keys;
  std::vector<std::string> args;

  // argv for EVALSHA sha numkeys keys... args...
  std::vector<std::string> evalsha_argv() const;
  // argv for EVAL source numkeys keys... args... (after a NOSCRIPT error)
  std::vector<std::string> eval_argv() const;
};

struct ReserveSlot {
  std::string topic;
  int64_t lease_ms = 0;
  int most = 0;
};

// Local calendar day "YYYYMMDD" of a time in ms: the stats hash of that day.
std::string day_of(int64_t ms);

ScriptCall add_call(const std::string& topic, const std::string& id, int64_t due_ms, int64_t now_ms,
                    const std::string& body);
ScriptCall del_call(const std::string& topic, const std::string& id, int64_t now_ms);
ScriptCall promote_call(int64_t now_ms, int limit);
ScriptCall requeue_expired_call(int64_t now_ms, int limit);
ScriptCall reserve_call(int64_t now_ms, const std::vector<ReserveSlot>& slots);
ScriptCall ack_call(const std::string& topic, const std::string& id, int64_t now_ms);
ScriptCall fail_call(const std::string& topic, const std::string& id, int attempt, int64_t now_ms,
                     int64_t retry_delay_ms, int max_attempts, const std::string& error);
// id empty: a batch of up to `limit` dead jobs of the topic.
ScriptCall dead_requeue_call(const std::string& topic, const std::string& id, int64_t now_ms,
                             int limit);
ScriptCall dead_purge_call(const std::string& topic, int limit);

}  // namespace dq

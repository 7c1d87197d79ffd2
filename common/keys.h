// Redis key names of one shard. Every key carries the same hash tag, so each
// Lua script touches a single Redis Cluster slot.
#pragma once

#include <string>
#include <string_view>

namespace dq::keys {

inline const std::string kPrefix = "{dq}:";

inline std::string jobs() { return kPrefix + "jobs"; }        // hash: job key -> record
inline std::string delayed() { return kPrefix + "delayed"; }  // zset: due ms
inline std::string working() { return kPrefix + "working"; }  // zset: lease deadline ms
inline std::string errors() { return kPrefix + "errors"; }    // hash: job key -> "ms|error"
inline std::string ready_prefix() { return kPrefix + "ready:"; }
inline std::string ready(std::string_view topic) { return ready_prefix() + std::string(topic); }
inline std::string dead(std::string_view topic) { return kPrefix + "dead:" + std::string(topic); }
inline std::string stats(std::string_view day) { return kPrefix + "stats:" + std::string(day); }
inline std::string timer_wake() { return kPrefix + "wake:timer"; }
inline std::string consumer_wake() { return kPrefix + "wake:consumer"; }

}  // namespace dq::keys

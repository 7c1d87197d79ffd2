// The shared copy of receivers' circuit breakers in Redis: key names, the
// script calls (common/store/lua/circuit_*.lua) and the reading of a circuit
// hash. The rules are common/store/circuit_state.h.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/redis/script_call.h"
#include "common/store/circuit_state.h"

namespace dq {

namespace keys {
// hash: the circuit of one receiver "host:port" or endpoint
// "host:port/path" (fields as circuit_state.h)
std::string circuit(const std::string& name);
// set: the circuit names with a hash on this shard
std::string circuits();
}  // namespace keys

// What one ended call says to one circuit (circuit_report.lua).
enum class CircuitVerdict {
  kNone,    // nothing (refused by the URL rules; or an answer to a quiet circuit)
  kAlive,   // an answer that proves it alive
  kFailed,  // a failure it counts
  kPause,   // a Retry-After: no calls for pause_ms, not a failure
};

struct CircuitNote {
  std::string name;  // receiver or endpoint (common/registry/receiver.h)
  CircuitVerdict verdict = CircuitVerdict::kNone;
  int64_t pause_ms = 0;
};

// One call's report to several circuits on one shard (its endpoint's and its
// receiver's); the reply is {change, {hash}, change, {hash}...} in order.
ScriptCall circuit_report_call(const std::vector<CircuitNote>& notes, int threshold,
                               int64_t open_ms, const std::string& error, const std::string& holder,
                               int64_t lease_ms);
// The same for one circuit, a failure or an answer.
ScriptCall circuit_report_call(const std::string& name, bool failed, int threshold, int64_t open_ms,
                               const std::string& error, const std::string& holder,
                               int64_t lease_ms);
ScriptCall circuit_probe_call(const std::string& receiver, const std::string& holder,
                              int64_t lease_ms);

// Reads field/value pairs from elements[first...] of an array reply.
Circuit circuit_from_reply(const redisReply* reply, size_t first);

}  // namespace dq

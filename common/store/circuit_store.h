// The shared copy of receivers' circuit breakers in Redis: key names, the
// script calls (common/store/lua/circuit_*.lua) and the reading of a circuit
// hash. The rules are common/store/circuit_state.h.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>

#include "common/redis/script_call.h"
#include "common/store/circuit_state.h"

namespace dq {

namespace keys {
// hash: the circuit of one receiver "host:port" (fields as circuit_state.h)
std::string circuit(const std::string& receiver);
// set: the receivers with a circuit hash on this shard
std::string circuits();
}  // namespace keys

ScriptCall circuit_report_call(const std::string& receiver, bool receiver_failed, int threshold,
                               int64_t open_ms, const std::string& error, const std::string& holder,
                               int64_t lease_ms);
ScriptCall circuit_probe_call(const std::string& receiver, const std::string& holder,
                              int64_t lease_ms);

// Reads field/value pairs from elements[first...] of an array reply.
Circuit circuit_from_reply(const redisReply* reply, size_t first);

}  // namespace dq

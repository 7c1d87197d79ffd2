// The circuit breaker of one receiver (a callback host:port) or endpoint
// (host:port/path, common/registry/receiver.h), as rules on a plain value.
// common/store/lua/circuit_report.lua and circuit_probe.lua apply the same rules to the shared copy
// in Redis (one hash per receiver, on the shard state_shard() names); the consumer applies these
// functions to a copy of its own only while that shard cannot be reached (docs/decisions.md,
// "Circuit breaking per receiver").
//
//   closed     calls go as usual; each receiver failure (no answer, 5xx, 429)
//              adds to `failures`, any answer that proves the receiver alive
//              sets it back to 0. A failure that brings it to the reporting
//              topic's circuit_failures opens the circuit.
//   open       no calls (for topics whose threshold `failures` has reached)
//              until probe_at_ms; then one process takes the probe lease.
//   half_open  the lease holder makes up to `allowed` calls at once: 1, and
//              twice as many after each success; at kCloseAllowed it closes.
//              A failure opens it again, with twice the wait (up to the
//              larger of circuit_open_ms and kMaxOpenMs).
//   paused     beside the phase: an endpoint that answered 429 or 503 with
//              Retry-After gets no call until paused_until_ms; not a failure.
#pragma once

#include <cstdint>
#include <string>

namespace dq {

enum class CircuitPhase { kClosed, kOpen, kHalfOpen };

const char* phase_name(CircuitPhase phase);             // "closed", "open", "half_open"
CircuitPhase phase_from_name(const std::string& name);  // unknown: closed

inline constexpr int kCloseAllowed = 16;              // successes 1+2+4+8 at once, then closed
inline constexpr int64_t kMaxOpenMs = 5 * 60 * 1000;  // the wait stops doubling here

struct Circuit {
  CircuitPhase phase = CircuitPhase::kClosed;
  int failures = 0;          // receiver failures in a row
  int64_t since_ms = 0;      // when the phase began
  int64_t opened_at_ms = 0;  // when it last left closed (for the close alert)
  int64_t open_ms = 0;       // the present wait before a probe
  int64_t probe_at_ms = 0;   // open: a probe may start from then
  int allowed = 1;           // half_open: calls at once for the lease holder
  std::string holder;        // half_open: the process holding the probe lease
  int64_t lease_until_ms = 0;
  std::string last_error;
  int64_t last_error_ms = 0;
  int64_t paused_until_ms = 0;  // a Retry-After pause ends then (0: none)
  int64_t paused_at_ms = 0;     // when the last pause was asked for
};

enum class CircuitChange { kNone, kOpened, kClosed };

// One ended call. threshold and open_ms are the reporting topic's
// circuit_failures and circuit_open_ms; holder renews its lease (lease_ms) when
// it holds it.
CircuitChange circuit_report(Circuit* circuit, bool receiver_failed, int threshold, int64_t open_ms,
                             const std::string& error, const std::string& holder, int64_t lease_ms,
                             int64_t now_ms);

// A Retry-After answer: no calls until now_ms + pause_ms (a longer pause
// already asked for stays).
void circuit_pause(Circuit* circuit, int64_t pause_ms, const std::string& error, int64_t now_ms);

// Whether a Retry-After pause holds the circuit's calls at now_ms.
bool circuit_paused(const Circuit& circuit, int64_t now_ms);

// Asks for the probe lease: granted (and renewed) when the circuit is open
// and its wait is over, or half-open with the lease free, expired or held by
// `holder` already. Closed: false (no lease is needed).
bool circuit_take_probe(Circuit* circuit, const std::string& holder, int64_t lease_ms,
                        int64_t now_ms);

// Whether a topic with this circuit_failures threshold stops calling.
bool circuit_stops(const Circuit& circuit, int threshold);

// Calls such a topic of process `holder` may have in flight at the
// receiver: -1 no limit, 0 none, else the half-open allowance.
int circuit_allowance(const Circuit& circuit, int threshold, const std::string& holder,
                      int64_t now_ms);

}  // namespace dq

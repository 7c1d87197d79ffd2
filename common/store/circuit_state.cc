// Implements common/store/circuit_state.h. Keep in step with
// common/store/lua/circuit_report.lua and circuit_probe.lua.
#include "common/store/circuit_state.h"

#include <algorithm>

namespace dq {

const char* phase_name(CircuitPhase phase) {
  switch (phase) {
    case CircuitPhase::kOpen:
      return "open";
    case CircuitPhase::kHalfOpen:
      return "half_open";
    default:
      return "closed";
  }
}

CircuitPhase phase_from_name(const std::string& name) {
  if (name == "open") {
    return CircuitPhase::kOpen;
  }
  if (name == "half_open") {
    return CircuitPhase::kHalfOpen;
  }
  return CircuitPhase::kClosed;
}

namespace {

void open_circuit(Circuit* circuit, int64_t wait_ms, int64_t now_ms) {
  circuit->phase = CircuitPhase::kOpen;
  circuit->since_ms = now_ms;
  circuit->open_ms = wait_ms;
  circuit->probe_at_ms = now_ms + wait_ms;
  circuit->allowed = 1;
  circuit->holder.clear();
  circuit->lease_until_ms = 0;
}

}  // namespace

CircuitChange circuit_report(Circuit* circuit, bool receiver_failed, int threshold, int64_t open_ms,
                             const std::string& error, const std::string& holder, int64_t lease_ms,
                             int64_t now_ms) {
  if (receiver_failed) {
    circuit->failures += 1;
    circuit->last_error = error;
    circuit->last_error_ms = now_ms;
    if (circuit->phase == CircuitPhase::kClosed) {
      if (circuit->failures < std::max(1, threshold)) {
        return CircuitChange::kNone;
      }
      circuit->opened_at_ms = now_ms;
      open_circuit(circuit, open_ms, now_ms);
      return CircuitChange::kOpened;
    }
    if (circuit->phase == CircuitPhase::kHalfOpen) {
      // A probe failed: wait twice as long before the next one.
      int64_t most = std::max(open_ms, kMaxOpenMs);
      open_circuit(circuit, std::min(most, std::max(open_ms, circuit->open_ms * 2)), now_ms);
    }
    return CircuitChange::kNone;
  }
  if (circuit->phase == CircuitPhase::kClosed) {
    circuit->failures = 0;
    return CircuitChange::kNone;
  }
  // The receiver answered: ramp up, and close once the ramp is done.
  if (circuit->phase == CircuitPhase::kOpen) {
    circuit->phase = CircuitPhase::kHalfOpen;
    circuit->since_ms = now_ms;
    circuit->allowed = 1;
  }
  circuit->allowed *= 2;
  if (circuit->allowed >= kCloseAllowed) {
    circuit->phase = CircuitPhase::kClosed;
    circuit->failures = 0;
    circuit->since_ms = now_ms;
    circuit->open_ms = 0;
    circuit->probe_at_ms = 0;
    circuit->allowed = 1;
    circuit->holder.clear();
    circuit->lease_until_ms = 0;
    return CircuitChange::kClosed;
  }
  if (circuit->holder == holder) {
    circuit->lease_until_ms = now_ms + lease_ms;
  }
  return CircuitChange::kNone;
}

void circuit_pause(Circuit* circuit, int64_t pause_ms, const std::string& error, int64_t now_ms) {
  circuit->paused_until_ms = std::max(circuit->paused_until_ms, now_ms + pause_ms);
  circuit->paused_at_ms = now_ms;
  circuit->last_error = error;
  circuit->last_error_ms = now_ms;
}

bool circuit_paused(const Circuit& circuit, int64_t now_ms) {
  return circuit.paused_until_ms > now_ms;
}

bool circuit_take_probe(Circuit* circuit, const std::string& holder, int64_t lease_ms,
                        int64_t now_ms) {
  if (circuit->phase == CircuitPhase::kOpen) {
    if (now_ms < circuit->probe_at_ms) {
      return false;
    }
    circuit->phase = CircuitPhase::kHalfOpen;
    circuit->since_ms = now_ms;
  } else if (circuit->phase == CircuitPhase::kHalfOpen) {
    if (!circuit->holder.empty() && circuit->holder != holder && circuit->lease_until_ms > now_ms) {
      return false;
    }
  } else {
    return false;
  }
  circuit->holder = holder;
  circuit->lease_until_ms = now_ms + lease_ms;
  return true;
}

bool circuit_stops(const Circuit& circuit, int threshold) {
  return circuit.phase != CircuitPhase::kClosed && circuit.failures >= std::max(1, threshold);
}

int circuit_allowance(const Circuit& circuit, int threshold, const std::string& holder,
                      int64_t now_ms) {
  if (!circuit_stops(circuit, threshold)) {
    return -1;
  }
  if (circuit.phase == CircuitPhase::kHalfOpen && circuit.holder == holder &&
      circuit.lease_until_ms > now_ms) {
    return circuit.allowed;
  }
  return 0;
}

}  // namespace dq

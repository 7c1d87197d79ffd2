// Implements server/circuit_metrics.h.
#include "server/circuit_metrics.h"

#include "common/core/prometheus_text.h"
#include "common/registry/receiver.h"

namespace dq {
namespace {

// {receiver} for a receiver's circuit; {receiver, endpoint} for an endpoint's.
Labels circuit_labels(const std::string& name) {
  if (!is_endpoint_circuit(name)) {
    return {{"receiver", name}};
  }
  return {{"receiver", circuit_receiver(name)}, {"endpoint", name}};
}

}  // namespace

std::string circuit_metrics_text(const CircuitListing& listing) {
  PrometheusText out;
  out.family("dq_circuit_state", "gauge",
             "Circuit breaker of a receiver (callback host:port): 0 closed, 1 half_open "
             "(probing), 2 open (calls stopped).");
  for (const auto& entry : listing.circuits) {
    int value = entry.circuit.phase == CircuitPhase::kOpen       ? 2
                : entry.circuit.phase == CircuitPhase::kHalfOpen ? 1
                                                                 : 0;
    out.sample("dq_circuit_state", circuit_labels(entry.receiver), value);
  }
  out.family("dq_circuit_failures", "gauge", "Receiver failures in a row.");
  for (const auto& entry : listing.circuits) {
    out.sample("dq_circuit_failures", circuit_labels(entry.receiver), entry.circuit.failures);
  }
  out.family("dq_circuit_since_seconds", "gauge",
             "Unix time the receiver's circuit state began (0: never changed).");
  for (const auto& entry : listing.circuits) {
    out.sample("dq_circuit_since_seconds", circuit_labels(entry.receiver),
               static_cast<double>(entry.circuit.since_ms) / 1000.0);
  }
  return out.text();
}

}  // namespace dq

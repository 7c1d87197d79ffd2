// Implements common/registry/job_waiting.h.
#include "common/registry/job_waiting.h"

#include <string>

#include "common/registry/receiver.h"

namespace dq {

bool waiting_needs_circuits(const Job& job, const Topic& topic) {
  return job.state == JobState::kReady && topic.online && topic.circuit_breaker;
}

Json job_waiting(const Job& job, const Topic& topic, const CircuitListing& circuits,
                 int64_t now_ms) {
  if (job.state != JobState::kReady) {
    return nullptr;
  }
  if (!topic.online) {
    return Json{{"reason", "offline"}, {"since_ms", nullptr}, {"detail", "the topic is offline"}};
  }
  if (!topic.circuit_breaker) {
    return nullptr;
  }
  // The receiver first: a dead host holds every endpoint of it.
  for (const std::string& name :
       {callback_receiver(topic.callback_url), callback_endpoint(topic.callback_url)}) {
    for (const ReceiverCircuit& entry : circuits.circuits) {
      if (entry.receiver != name) {
        continue;
      }
      const Circuit& c = entry.circuit;
      if (circuit_stops(c, topic.circuit_failures)) {
        return Json{{"reason", "circuit_open"},
                    {"since_ms", c.opened_at_ms > 0 ? c.opened_at_ms : c.since_ms},
                    {"detail", "receiver " + name + " failing (circuit " + phase_name(c.phase) +
                                   ", " + std::to_string(c.failures) +
                                   " failures; last error: " + c.last_error + ")"}};
      }
      if (circuit_paused(c, now_ms)) {
        return Json{{"reason", "paused_by_retry_after"},
                    {"since_ms", c.paused_at_ms},
                    {"detail", "receiver " + name + " asked for a pause (Retry-After) until " +
                                   std::to_string(c.paused_until_ms) + " ms"}};
      }
    }
  }
  return nullptr;
}

}  // namespace dq

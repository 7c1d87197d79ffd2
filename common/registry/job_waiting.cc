// Implements common/registry/job_waiting.h.
#include "common/registry/job_waiting.h"

#include <string>

#include "common/core/clock.h"
#include "common/core/time_text.h"
#include "common/registry/receiver.h"
#include "common/registry/topic_caps.h"
#include "common/registry/topic_window.h"
#include "common/store/coordination_shard.h"

namespace dq {
namespace {

// A ready job while the topic's delivery window is closed (the consumers do
// not reserve it), or a job the timer held for the window (due at its
// opening, spread at max_rate): null otherwise.
Json window_waiting(const Job& job, const Topic& topic, int64_t now_ms) {
  if (job.state != JobState::kReady && !job.held_by_window) {
    return nullptr;
  }
  auto window = parse_topic_window(topic);
  if (!window.is_ok() || !*window) {
    return nullptr;
  }
  const DeliveryWindow& open_hours = **window;
  std::string named = "the topic's delivery window (" + open_hours.text() + ")";
  if (!open_hours.is_open_at(now_ms)) {
    int64_t opens = window_opens_at(open_hours, now_ms);
    return Json{{"reason", "delivery_window"},
                {"since_ms", nullptr},
                {"detail", named + " is closed; it opens at " + utc_text(opens)}};
  }
  if (job.state == JobState::kReady) {
    return nullptr;
  }
  return Json{{"reason", "delivery_window"},
              {"since_ms", nullptr},
              {"detail", named + " opened; the jobs it held are due one after another at the "
                                 "topic's max_rate (this one at its due_at_ms)"}};
}

// The receiver's or the endpoint's circuit that stops the topic's calls, or
// pauses them (Retry-After): null when none.
Json circuit_waiting(const Topic& topic, const CircuitListing& circuits, int64_t now_ms) {
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

// The topic's caps, when they hold its calls now (the consumers' permits,
// cap_state.lua): its calls open at max_in_flight, or its rate spent.
Json cap_waiting(const Topic& topic, const CapState& caps) {
  if (!caps.known) {
    return nullptr;
  }
  if (topic.max_in_flight > 0 && caps.permits >= topic.max_in_flight) {
    return Json{{"reason", "max_in_flight"},
                {"since_ms", nullptr},
                {"detail", "the topic's calls open are at its max_in_flight (" +
                               std::to_string(topic.max_in_flight) + ")"}};
  }
  int64_t wait = rate_wait_ms(caps, topic.max_rate, effective_burst(topic));
  if (wait > 0) {
    return Json{{"reason", "max_rate"},
                {"since_ms", nullptr},
                {"detail", "the topic's rate is spent (max_rate " + std::to_string(topic.max_rate) +
                               "/s, burst " + std::to_string(effective_burst(topic)) +
                               "): its next call may start in " + std::to_string(wait) + " ms"}};
  }
  return nullptr;
}

// A job added with "after" that waits for jobs not delivered yet.
Json dependency_waiting(const Job& job) {
  Json after = Json::array();
  std::string names;
  for (const std::string& key : job.after) {
    std::string topic, id;
    if (!split_job_key(key, &topic, &id)) {
      continue;
    }
    after.push_back(Json{{"topic", topic}, {"id", id}});
    names += (names.empty() ? "" : ", ") + topic + "/" + id;
  }
  return Json{
      {"reason", "dependencies"},
      {"since_ms", job.created_at_ms},
      {"detail", "waits for " + std::to_string(after.size()) + " job(s) to be delivered (" + names +
                     "); then it is due at its due_at_ms, or at once if that has passed"},
      {"after", std::move(after)}};
}

}  // namespace

bool waiting_needs_circuits(const Job& job, const Topic& topic) {
  return job.state == JobState::kReady && topic.online && topic.circuit_breaker;
}

bool waiting_needs_caps(const Job& job, const Topic& topic) {
  return job.state == JobState::kReady && topic.online && has_caps(topic);
}

Json job_waiting(const Job& job, const Topic& topic, const CircuitListing& circuits,
                 const CapState& caps, int64_t now_ms) {
  if (job.state == JobState::kWaiting) {
    return dependency_waiting(job);
  }
  if (job.state != JobState::kReady && !job.held_by_window) {
    return nullptr;
  }
  if (!topic.online) {
    return Json{{"reason", "offline"}, {"since_ms", nullptr}, {"detail", "the topic is offline"}};
  }
  if (Json window = window_waiting(job, topic, now_ms); !window.is_null()) {
    return window;
  }
  if (job.state != JobState::kReady) {
    return nullptr;
  }
  if (Json circuit = circuit_waiting(topic, circuits, now_ms); !circuit.is_null()) {
    return circuit;
  }
  return cap_waiting(topic, caps);
}

void find_job_waiting(const ShardSet& shards, const std::vector<ShardAddress>& addresses,
                      const Job& job, const Topic& topic, std::function<void(Json)> done) {
  // Copies: the caller's set may be gone before the shards answer.
  auto with_caps = [shards, addresses, job, topic, done](const CircuitListing& circuits) {
    if (!waiting_needs_caps(job, topic) || addresses.empty()) {
      return done(job_waiting(job, topic, circuits, CapState{}, now_ms()));
    }
    read_cap_state(shards, coordination_shard(addresses, topic.name), topic.name,
                   [job, topic, circuits, done](const CapState& caps) {
                     done(job_waiting(job, topic, circuits, caps, now_ms()));
                   });
  };
  if (!waiting_needs_circuits(job, topic)) {
    return with_caps(CircuitListing{});
  }
  list_circuits(shards, std::move(with_caps));
}

}  // namespace dq

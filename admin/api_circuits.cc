// GET /api/circuits: each receiver's and endpoint's circuit breaker
// (common/store/circuit_listing.h) and which receiver and endpoint each topic calls, so the topics
// page shows the state beside each topic. Answers from the loop, within [redis] command_timeout_ms.
#include <memory>

#include "admin/admin_app.h"
#include "common/registry/receiver.h"
#include "common/store/circuit_listing.h"

namespace dq {

void AdminApp::circuits_route(Exchange& exchange) {
  if (exchange.method() != "GET") {
    return exchange.reply_error(405, "GET");
  }
  auto topics = registry_->list_topics();
  if (!topics.is_ok()) {
    return exchange.reply_error(topics.status());
  }
  Json by_topic = Json::object();
  Json endpoints = Json::object();
  for (const Topic& topic : *topics) {
    if (topic.circuit_breaker) {
      by_topic[topic.name] = callback_receiver(topic.callback_url);
      endpoints[topic.name] = callback_endpoint(topic.callback_url);
    }
  }
  auto held = exchange.hold();
  list_circuits(shards(), [held, by_topic, endpoints](CircuitListing listing) {
    Json circuits = Json::array();
    for (const auto& entry : listing.circuits) {
      circuits.push_back(circuit_to_json(entry));
    }
    held->reply_json(200, Json{{"circuits", circuits},
                               {"receivers", by_topic},
                               {"endpoints", endpoints},
                               {"unreachable_shards", listing.unreachable_shards}});
  });
}

}  // namespace dq

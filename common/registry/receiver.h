// A topic's receiver and endpoint, the units circuit breakers guard
// (common/store/circuit_state.h, docs/delivery.md "Circuit breaking").
//   receiver  the host:port callbacks go to: topics whose callback URLs name
//             the same host and port share it, whatever their paths. Only
//             calls with no answer count against it.
//   endpoint  the receiver and the URL's path ("host:port/path", with
//             "https://" in front for https): its own circuit, which every
//             receiver failure and every 5xx or 429 counts against.
#pragma once

#include <string>

namespace dq {

// "host:port" ("[v6]:port" for an IPv6 literal), the port explicit or the
// scheme's; "" when the URL does not parse.
std::string callback_receiver(const std::string& url);

// "host:port/path" ("https://host:port/path" for https; the query left out);
// "" when the URL does not parse.
std::string callback_endpoint(const std::string& url);

// The receiver a circuit name belongs to: the endpoint's host:port, or the
// name itself when it names a receiver. Both circuits live on the shard
// state_shard() names for the receiver, so one script changes them together.
std::string circuit_receiver(const std::string& circuit_name);

// Whether a circuit name names an endpoint (it has a path) or a receiver.
bool is_endpoint_circuit(const std::string& circuit_name);

}  // namespace dq

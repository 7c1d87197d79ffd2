// A topic's receiver: the host:port its callbacks go to, the unit a circuit
// breaker guards (common/store/circuit_state.h). Topics whose callback URLs
// name the same host and port share one receiver, whatever their paths.
#pragma once

#include <string>

namespace dq {

// "host:port" ("[v6]:port" for an IPv6 literal), the port explicit or the
// scheme's; "" when the URL does not parse.
std::string callback_receiver(const std::string& url);

}  // namespace dq

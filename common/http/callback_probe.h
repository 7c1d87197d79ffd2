// A sample delivery to a topic's callback URL, for the admin page's "test
// callback" button: the same shape as a real delivery (POST JSON or GET with
// query parameters, X-DQ-* headers; see consumer/callback_request.h) with the
// id "dq-test-callback", body {"test": true} and an X-DQ-Test: 1 header, under
// the same URL rules as deliveries (common/registry/callback_url.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/registry/callback_url.h"
#include "common/registry/registry.h"

namespace dq {

// (Named apart from checker/shard_probe.h's ProbeResult: both link into dqd, and
// two classes of one name break the one-definition rule.)
struct CallbackProbeResult {
  bool reached = false;     // an HTTP answer came
  int status = 0;           // its status (0 when not reached)
  int64_t time_ms = 0;      // until the answer (or the failure)
  std::string first_bytes;  // up to 512 bytes of the answer
  std::string error;        // why it was not reached, or refused by the rules
  bool ok() const { return status >= 200 && status <= 299; }
};

CallbackProbeResult probe_callback(const Topic& topic, const CallbackPolicy& policy);

}  // namespace dq

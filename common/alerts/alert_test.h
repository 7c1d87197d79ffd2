// A test alert sent now, for `dqctl alert test` and the admin page's "send
// test": a mail to the global recipients and a webhook call, each with what
// its server answered.
#pragma once

#include <string>

#include "common/alerts/alert_settings.h"
#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

// {"mail": {"ok", "to", "answer"|"error"}, "webhook": {"ok", "url",
// "status", "took_ms", "answer"|"error"}}, a channel absent when it is off.
// The webhook's "answer" is its status and time ("HTTP 200 in 12 ms"), never
// what its server said. kInvalid when both are off. *failed tells whether a
// channel failed. sender names who asked ("dqctl alert test", "the admin page").
// The webhook obeys the callback address rules (common/alerts/webhook.h).
Result<Json> send_test_alert(const AlertSettings& settings, const Config& config,
                             Registry& registry, const std::string& sender, int timeout_ms,
                             bool* failed);

}  // namespace dq

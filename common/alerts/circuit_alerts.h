// The alert events of a receiver's circuit breaker, queued in the alert
// outbox (common/alerts/alert_outbox.h) by the one consumer whose report
// opened or closed the shared circuit (circuit_report.lua gives each change to
// exactly one report), so each goes out once across all processes and hosts.
#pragma once

#include <cstdint>
#include <string>

#include "common/alerts/alert_outbox.h"
#include "common/registry/registry.h"

namespace dq {

// kind "circuit_open": calls to `receiver` stopped after `failures` failures.
AlertMail circuit_open_alert(const Topic& topic, const std::string& receiver, int failures,
                             int64_t wait_ms, const std::string& last_error, int64_t now_ms);

// kind "circuit_closed": it answers again; open_for_ms is how long it was open.
AlertMail circuit_closed_alert(const Topic& topic, const std::string& receiver, int64_t open_for_ms,
                               int64_t now_ms);

}  // namespace dq

// A topic as JSON: every registry field (common/registry/registry.h) under
// its registry name. The one writer of it, so the admin API and dqctl --json
// print the same object.
#pragma once

#include "common/core/json.h"
#include "common/registry/registry.h"

namespace dq {

// {"name", "mode", "callback_url", "method", "callback_format", "success_json",
//  "timeout_ms", "default_delay_s", "tz", "delivery_window",
//  "max_attempts", "priority", "retry_ms",
//  "alert_emails", "creator", "online", "created_at_ms", "updated_at_ms",
//  "max_deferrals", "dead_on", "retry_jitter",
//  "circuit_breaker", "circuit_failures", "circuit_open_ms",
//  "max_in_flight", "max_rate", "max_burst",
//  "dead_callback", "dedup_window_s", "max_retry_duration_s",
//  "ttl", "keep_done_days", "late_policy", "on_dependency_dead",
//  "signing_secret" (masked), "signing_public_key", "signing_keys",
//  "version" (what an edit names: common/registry/registry_write.h)}
Json topic_to_json(const Topic& topic);

// The signing settings as the admin API and dqctl take them (same names):
//   signing_secret:     "generate" (a new random whsec_ secret), "whsec_..."
//                       (this one), "" (stop HMAC signing);
//   signing_public_key: "generate" (a new Ed25519 key pair), "" (stop);
// A value equal to what topic_to_json shows (the masked secret, the current
// public key) changes nothing, so a form sent back as read is harmless. A new
// key retires the current one of its kind after overlap_ms (both are sent
// meanwhile). kInvalid names the field.
Status set_topic_signing(Topic* topic, const std::string& field, const std::string& value,
                         int64_t overlap_ms, int64_t now_ms);

// The overlap named by "signing_overlap_s" (seconds, 0 to 30 days); kInvalid otherwise.
Result<int64_t> signing_overlap_ms(int64_t seconds);

// The full HMAC secret of `after` when it differs from the one of `before`
// (the call that set it shows it once), else "".
std::string new_signing_secret(const Topic& before, const Topic& after);

}  // namespace dq

// A topic as JSON: every registry field (common/registry/registry.h) under
// its registry name. The one writer of it, so the admin API and dqctl --json
// print the same object.
#pragma once

#include "common/core/json.h"
#include "common/registry/registry.h"

namespace dq {

// {"name", "callback_url", "method", "callback_format", "success_json",
//  "timeout_ms", "default_delay_s", "max_attempts", "priority", "retry_ms",
//  "alert_emails", "creator", "online", "created_at_ms", "updated_at_ms",
//  "version" (what an edit names: common/registry/registry_write.h)}
Json topic_to_json(const Topic& topic);

}  // namespace dq

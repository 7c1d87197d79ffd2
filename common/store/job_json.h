// The one writer of a job as JSON, shared by the HTTP API (GET .../jobs/{id},
// dead letters), dq-admin and dqctl, so every one names the fields alike:
// {"topic","id","state","attempts","due_at_ms","created_at_ms"
//  (,"expires_at_ms")(,"last_error","last_error_at_ms"),"body"}. The body goes in as stored,
// byte for byte, when it is JSON (common/core/json_span.h), else as a JSON
// string (a record written by an older tool).
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/store/job.h"

namespace dq {

// The JSON text (replies embed it without re-encoding the body).
std::string job_json(const Job& job);
// The same as a Json value (for answers built as Json).
Json job_to_json(const Job& job);

}  // namespace dq

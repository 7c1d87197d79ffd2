// AddRequest: one job to add, as the API server built it from a request
// (server/job_request.h validates it) or a blocking caller hands it over.
#pragma once

#include <optional>
#include <string>

#include "common/store/script_calls.h"

namespace dq {

struct AddRequest {
  std::string topic;
  std::string id;
  std::string body;  // the body's JSON text exactly as the client sent it
  DueTime due;       // relative to Redis's clock, or a fixed epoch time
};

// A job to change in place (common/store/lua/update.lua): what is not given
// is kept. A job not found is added as `body` due at `add_due` (the add's
// defaults), so a new body is needed then.
struct UpdateRequest {
  std::string topic;
  std::string id;
  std::optional<std::string> body;  // JSON text as the client sent it
  std::optional<DueTime> due;
  DueTime add_due;
};

}  // namespace dq

// AddRequest: one job to add, as the API server built it from a request
// (server/job_request.h validates it) or a blocking caller hands it over.
#pragma once

#include <string>

#include "common/store/script_calls.h"

namespace dq {

struct AddRequest {
  std::string topic;
  std::string id;
  std::string body;  // the body's JSON text exactly as the client sent it
  DueTime due;       // relative to Redis's clock, or a fixed epoch time
};

}  // namespace dq

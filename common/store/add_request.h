// AddRequest: one job to add, as the API server built it from a request
// (server/job_request.h validates it) or a blocking caller hands it over.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/store/job_expiry.h"
#include "common/store/script_calls.h"

namespace dq {

// A job named by its topic and id (an add's "after").
struct JobRef {
  std::string topic;
  std::string id;
};

struct AddRequest {
  std::string topic;
  std::string id;
  std::string body;  // the body's JSON text exactly as the client sent it
  DueTime due;       // relative to Redis's clock, or a fixed epoch time
  JobExpiry expiry;  // never, a ttl after its due time, or a fixed time
  // The jobs it waits for ("after"): it is added waiting until each was
  // delivered (docs/delivery.md, "Dependencies between jobs").
  std::vector<JobRef> after;
  // Set by the store: the keys of those it still waits for, '\n'-joined,
  // once their shards registered it (common/store/dependencies.h).
  std::string after_keys;
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
  // nullopt: the job's expiry is kept (and an add has add_expiry).
  std::optional<JobExpiry> expiry;
  JobExpiry add_expiry;
};

}  // namespace dq

// Implements admin/job_json.h.
#include "admin/job_json.h"

namespace dq {

Json job_to_json(const Job& job) {
  Json body = Json::parse(job.body, nullptr, false);
  if (body.is_discarded()) {
    body = job.body;
  }
  Json out{{"topic", job.topic},
           {"id", job.id},
           {"state", state_name(job.state)},
           {"attempts", job.attempts},
           {"due_at_ms", job.due_at_ms},
           {"created_at_ms", job.created_at_ms},
           {"body", body}};
  if (!job.last_error.empty()) {
    out["last_error"] = job.last_error;
    out["last_error_at_ms"] = job.last_error_at_ms;
  }
  return out;
}

}  // namespace dq

// Implements common/store/job_json.h.
#include "common/store/job_json.h"

#include "common/core/json_span.h"

namespace dq {

std::string job_json(const Job& job) {
  Json out{{"topic", job.topic},
           {"id", job.id},
           {"state", state_name(job.state)},
           {"attempts", job.attempts},
           {"deferrals", job.deferrals},
           {"due_at_ms", job.due_at_ms},
           {"created_at_ms", job.created_at_ms}};
  if (job.expires_at_ms > 0) {
    out["expires_at_ms"] = job.expires_at_ms;
  }
  if (!job.last_error.empty()) {
    out["last_error"] = job.last_error;
    out["last_error_at_ms"] = job.last_error_at_ms;
  }
  return with_raw_member(out.dump(-1, ' ', false, Json::error_handler_t::replace), "body",
                         embeddable_json(job.body));
}

Json job_to_json(const Job& job) { return Json::parse(job_json(job), nullptr, false); }

}  // namespace dq

// A job as the admin page's JSON: its body embedded as JSON when it is JSON
// (it always is when added through the API), else as text.
#pragma once

#include "common/core/json.h"
#include "common/store/job.h"

namespace dq {

Json job_to_json(const Job& job);

}  // namespace dq

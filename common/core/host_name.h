// This host's name (gethostname), read once per process: what a reserve id
// and a permit holder start with, and what a topic's history names as the
// host that delivered a job.
#pragma once

#include <string>

namespace dq {

const std::string& host_name();

}  // namespace dq

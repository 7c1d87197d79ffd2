// Asks tests/support/time_oracle.py (Python's zoneinfo and Debian's
// python3-croniter, run by Debian's /usr/bin/python3) for independent
// answers to the time rules; the request and answer keys are that script's.
#pragma once

#include "common/core/json.h"

namespace dq::test {

// FAILs the test (saying what to install) when the script cannot run.
Json ask_time_oracle(const Json& request);

}  // namespace dq::test

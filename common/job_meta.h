// A job's metadata record in {dq}:jobs, as the Lua scripts write it:
// "state|attempts|due|created|incarnation|lease|max" (see
// common/lua/lib/prelude.lua). The body is stored apart, in {dq}:bodies.
#pragma once

#include <string>
#include <string_view>

#include "common/job.h"

namespace dq {

// Fills state, attempts, due, created and incarnation; *lease (when given)
// gets the reserve id of a working job. False when the record is malformed.
bool parse_job_meta(std::string_view text, Job* job, std::string* lease = nullptr);

// Error entries in the errors hash: "<ms>|<text>".
void parse_error_entry(std::string_view entry, Job* job);

// State letter -> state; false for an unknown letter.
bool state_of_letter(char letter, JobState* state);

}  // namespace dq

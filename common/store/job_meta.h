// A job's record in its bucket {dq}:jobs:<b>, as the Lua scripts write it: the meta
// "state|attempts|due|created|incarnation|lease|max[|deferrals[|first attempt ms]]", then '\n' and
// the body when the body is small enough to be stored inline; a bigger body is stored apart, in
// {dq}:bodies (see common/store/lua/lib/prelude.lua).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/store/job.h"

namespace dq {

// Bodies of at most this many bytes are stored inline in the record
// (kInlineBody in common/store/lua/lib/prelude.lua decides; tests check the two agree).
constexpr size_t kInlineBodyBytes = 256;

// Fills state, attempts, due, created, incarnation and deferrals, and the body when the
// record carries it inline; *lease (when given) gets the reserve id of a
// working job. False when the record is malformed.
bool parse_job_meta(std::string_view record, Job* job, std::string* lease = nullptr);

// True when the record carries its body: no {dq}:bodies read is needed.
bool body_is_inline(std::string_view record);

// Error entries in the errors hash: "<ms>|<text>".
void parse_error_entry(std::string_view entry, Job* job);

// State letter -> state; false for an unknown letter.
bool state_of_letter(char letter, JobState* state);

}  // namespace dq

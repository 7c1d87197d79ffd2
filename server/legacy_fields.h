// Reading a legacy request's fields the way the PHP delay queue did, and
// the data of its `get` replies.
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/store/job.h"

namespace dq {

// A string field of the request, or "" when absent or of another type.
// A number is taken as the text PHP made of it (ids are often order numbers
// sent as numbers): integers as their digits (10 -> "10"), floats as PHP's
// (string) cast with precision 14: 1.5 -> "1.5", 1.50 -> "1.5",
// 1e3 -> "1000", 10.0 -> "10", 0.1 -> "0.1", 1e20 -> "1.0E+20".
std::string legacy_text_field(const Json& request, const char* name);
std::string php_number_text(const Json& number);

// The data of a successful `get`: the body with the PHP queue's own fields
// (notify_time, dq_set_time, exp_notify_nums; common/http/php_fields.h) as the
// PHP server returned it; a body that is not an object or null as it is.
std::string legacy_get_data(const Job& job);

}  // namespace dq

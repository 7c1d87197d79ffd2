// Applying the admin page's topic form (JSON) onto a topic with a message
// naming the field. A topic as JSON is common/registry/topic_json.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"
#include "common/registry/topic_json.h"

namespace dq {

// Sets the fields present in `form` (unknown keys and "name" are refused);
// kInvalid "field: why" on a value of the wrong type.
Status apply_topic_form(const Json& form, Topic* topic);

// The version an edit names: the form's "version" and/or the If-Match
// header (3 or "3"); nullopt when neither is given; kInvalid when either is
// not a whole number or they differ.
Result<std::optional<int64_t>> form_version(const Json& form, const std::string& if_match);

// "callback_url: must start with http://" -> "callback_url" ("" when none).
std::string field_of(const Status& status);

}  // namespace dq

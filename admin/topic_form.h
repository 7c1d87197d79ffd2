// Applying a form's JSON onto a topic with a message naming the field. A
// topic as JSON is common/registry/topic_json.h (included for the API's use).
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"
#include "common/registry/topic_json.h"

namespace dq {

// Sets the fields present in `form` (unknown keys and "name" are refused);
// kInvalid "field: why" on a value of the wrong type.
Status apply_topic_form(const Json& form, Topic* topic);

// "callback_url: must start with http://" -> "callback_url" ("" when none).
std::string field_of(const Status& status);

}  // namespace dq

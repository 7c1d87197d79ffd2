// A topic as the admin page's JSON (every registry field, common/registry.h),
// and applying a form's JSON onto a topic with a message naming the field.
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq {

Json topic_to_json(const Topic& topic);

// Sets the fields present in `form` (unknown keys and "name" are refused);
// kInvalid "field: why" on a value of the wrong type.
Status apply_topic_form(const Json& form, Topic* topic);

// "callback_url: must start with http://" -> "callback_url" ("" when none).
std::string field_of(const Status& status);

}  // namespace dq

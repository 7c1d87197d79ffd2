// The one writer of a registered topic as JSON (every registry field), for
// dq-admin's API and any other tool that shows a topic: "callback_format",
// "success_json", ... named as the registry names them.
#pragma once

#include "common/core/json.h"
#include "common/registry/registry.h"

namespace dq {

Json topic_to_json(const Topic& topic);

}  // namespace dq

// Implements common/registry/topic_json.h.
#include "common/registry/topic_json.h"

namespace dq {

Json topic_to_json(const Topic& topic) {
  return Json{{"name", topic.name},
              {"callback_url", topic.callback_url},
              {"method", topic.method},
              {"callback_format", topic.callback_format},
              {"success_json", topic.success_json},
              {"timeout_ms", topic.timeout_ms},
              {"default_delay_s", topic.default_delay_s},
              {"max_attempts", topic.max_attempts},
              {"priority", topic.priority},
              {"retry_ms", topic.retry_ms},
              {"alert_emails", topic.alert_emails},
              {"creator", topic.creator},
              {"online", topic.online},
              {"created_at_ms", topic.created_at_ms},
              {"updated_at_ms", topic.updated_at_ms},
              {"version", topic.version}};
}

}  // namespace dq

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
              {"max_deferrals", topic.max_deferrals},
              {"dead_on", topic.dead_on},
              {"retry_jitter", topic.retry_jitter},
              {"circuit_breaker", topic.circuit_breaker},
              {"circuit_failures", topic.circuit_failures},
              {"circuit_open_ms", topic.circuit_open_ms},
              {"max_in_flight", topic.max_in_flight},
              {"max_rate", topic.max_rate},
              {"max_burst", topic.max_burst}};
}

}  // namespace dq

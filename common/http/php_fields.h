// The PHP delay queue's view of a job. That queue stored each body with two
// fields of its own added, and sent and returned the whole of it:
//   notify_time      when the job is due, "Y-m-d H:i:s" (server local time),
//                    re-set on every retry to that retry's due time;
//   dq_set_time      when it was added (kept when the body already has one);
//   exp_notify_nums  failed deliveries so far, only after the first failure.
// dq stores the body as the producer sent it and adds these fields only
// where PHP-era clients read them: `form` callbacks (consumer) and legacy
// `get` replies (server).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dq {

struct PhpField {
  std::string name;
  std::string json;  // the value as raw JSON text (the body's own bytes)
};

// The body's top-level members in their order, then notify_time and
// dq_set_time, then exp_notify_nums when `failed_attempts` plus the body's
// own exp_notify_nums (a job imported mid-retry) is above 0; a member of
// the body with one of these names is replaced in place (dq_set_time: kept).
// A null body gives just the added fields. nullopt when the body is not an
// object or null (an array, a string, a number): PHP could not add fields to it.
std::optional<std::vector<PhpField>> php_fields(const std::string& body, int64_t due_at_ms,
                                                int64_t created_at_ms, int failed_attempts);

// The fields as one JSON object text: {"a":1,"notify_time":"...",...}.
std::string php_fields_json(const std::vector<PhpField>& fields);

}  // namespace dq

// Implements admin/topic_form.h.
#include "admin/topic_form.h"

#include <limits>

#include "common/core/clock.h"
#include "common/registry/topic_json.h"

namespace dq {
namespace {

Status wrong(const std::string& field, const char* what) {
  return Status(Code::kInvalid, field + ": must be " + what);
}

template <typename T>
Status set_int(const Json& value, const std::string& field, T* out) {
  if (!value.is_number_integer()) {
    return wrong(field, "a whole number");
  }
  int64_t number = value.get<int64_t>();
  if (number < std::numeric_limits<T>::min() || number > std::numeric_limits<T>::max()) {
    return wrong(field, "a smaller number");
  }
  *out = static_cast<T>(number);
  return Status::ok();
}

Status set_text(const Json& value, const std::string& field, std::string* out) {
  if (!value.is_string()) {
    return wrong(field, "text");
  }
  *out = value.get<std::string>();
  return Status::ok();
}

}  // namespace

Status apply_topic_form(const Json& form, Topic* topic) {
  // The overlap of a rotation this form makes (docs/callbacks.md).
  int64_t overlap_ms = kDefaultSigningOverlapMs;
  if (auto overlap = form.find("signing_overlap_s"); overlap != form.end()) {
    if (!overlap->is_number_integer()) {
      return wrong("signing_overlap_s", "a whole number of seconds");
    }
    auto checked = signing_overlap_ms(overlap->get<int64_t>());
    if (!checked.is_ok()) {
      return checked.status();
    }
    overlap_ms = *checked;
  }
  for (const auto& [key, value] : form.items()) {
    Status status;
    if (key == "signing_secret" || key == "signing_public_key") {
      if (!value.is_string()) {
        return wrong(key, "text");
      }
      status = set_topic_signing(topic, key, value.get<std::string>(), overlap_ms, now_ms());
    } else if (key == "signing_overlap_s" || key == "signing_keys") {
      continue;  // read above; shown, not edited
    } else if (key == "callback_url") {
      status = set_text(value, key, &topic->callback_url);
    } else if (key == "method") {
      status = set_text(value, key, &topic->method);
    } else if (key == "callback_format") {
      status = set_text(value, key, &topic->callback_format);
    } else if (key == "success_json") {
      status = set_text(value, key, &topic->success_json);
    } else if (key == "retry_ms") {
      status = set_text(value, key, &topic->retry_ms);
    } else if (key == "alert_emails") {
      status = set_text(value, key, &topic->alert_emails);
    } else if (key == "creator") {
      status = set_text(value, key, &topic->creator);
    } else if (key == "timeout_ms") {
      status = set_int(value, key, &topic->timeout_ms);
    } else if (key == "default_delay_s") {
      status = set_int(value, key, &topic->default_delay_s);
    } else if (key == "max_attempts") {
      status = set_int(value, key, &topic->max_attempts);
    } else if (key == "priority") {
      status = set_int(value, key, &topic->priority);
    } else if (key == "max_deferrals") {
      status = set_int(value, key, &topic->max_deferrals);
    } else if (key == "dead_on") {
      status = set_text(value, key, &topic->dead_on);
    } else if (key == "retry_jitter") {
      status = set_int(value, key, &topic->retry_jitter);
    } else if (key == "circuit_failures") {
      status = set_int(value, key, &topic->circuit_failures);
    } else if (key == "circuit_open_ms") {
      status = set_int(value, key, &topic->circuit_open_ms);
    } else if (key == "circuit_breaker") {
      if (!value.is_boolean()) {
        return wrong(key, "true or false");
      }
      topic->circuit_breaker = value.get<bool>();
    } else if (key == "max_in_flight") {
      status = set_int(value, key, &topic->max_in_flight);
    } else if (key == "max_rate") {
      status = set_int(value, key, &topic->max_rate);
    } else if (key == "max_burst") {
      status = set_int(value, key, &topic->max_burst);
    } else if (key == "dead_callback") {
      status = set_text(value, key, &topic->dead_callback);
    } else if (key == "online") {
      if (!value.is_boolean()) {
        return wrong(key, "true or false");
      }
      topic->online = value.get<bool>();
    } else if (key == "name") {
      if (!value.is_string() || value.get<std::string>() != topic->name) {
        return Status(Code::kInvalid, "name: a topic cannot be renamed");
      }
    } else if (key == "created_at_ms" || key == "updated_at_ms") {
      continue;  // shown, not edited
    } else if (key == "version") {
      continue;  // the version the edit names: form_version()
    } else {
      return Status(Code::kInvalid, key + ": no such field");
    }
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

Result<std::optional<int64_t>> form_version(const Json& form, const std::string& if_match) {
  std::optional<int64_t> version;
  std::string tag = if_match;
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') {
    tag = tag.substr(1, tag.size() - 2);  // If-Match: "3" as well as 3
  }
  if (!tag.empty()) {
    if (tag.size() > 18 || tag.find_first_not_of("0123456789") != std::string::npos) {
      return Status(Code::kInvalid, "If-Match: must be the version read, a whole number");
    }
    version = std::stoll(tag);
  }
  auto field = form.is_object() ? form.find("version") : form.end();
  if (form.is_object() && field != form.end()) {
    if (!field->is_number_integer() || field->get<int64_t>() < 0) {
      return Status(Code::kInvalid, "version: must be the version read, a whole number");
    }
    if (version && *version != field->get<int64_t>()) {
      return Status(Code::kInvalid, "version: differs from If-Match");
    }
    version = field->get<int64_t>();
  }
  return version;
}

std::string field_of(const Status& status) {
  const std::string& message = status.message();
  size_t colon = message.find(": ");
  if (colon == std::string::npos) {
    return "";
  }
  std::string field = message.substr(0, colon);
  if (field.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos) {
    return "";
  }
  return field;
}

}  // namespace dq

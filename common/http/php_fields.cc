// Implements common/http/php_fields.h.
#include "common/http/php_fields.h"

#include "common/core/json.h"
#include "common/core/json_span.h"
#include "common/core/time_text.h"

namespace dq {
namespace {

void set_field(std::vector<PhpField>* fields, const std::string& name, const std::string& json,
               bool keep_existing) {
  for (PhpField& field : *fields) {
    if (field.name != name) {
      continue;
    }
    if (!keep_existing) {
      field.json = json;
    }
    return;
  }
  fields->push_back(PhpField{name, json});
}

// A count the body carries already: an integer or a digit string.
int64_t body_count(const std::vector<PhpField>& fields, const std::string& name) {
  for (const PhpField& field : fields) {
    if (field.name != name) {
      continue;
    }
    Json value = Json::parse(field.json, nullptr, false);
    if (value.is_number_integer()) {
      return value.get<int64_t>();
    }
    if (value.is_string()) {
      const std::string& text = value.get_ref<const std::string&>();
      if (!text.empty() && text.size() < 10 &&
          text.find_first_not_of("0123456789") == std::string::npos) {
        return std::stoll(text);
      }
    }
  }
  return 0;
}

}  // namespace

std::optional<std::vector<PhpField>> php_fields(const std::string& body, int64_t due_at_ms,
                                                int64_t created_at_ms, int failed_attempts) {
  std::string text = embeddable_json(body);
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(text, nullptr, false);
  if (document.is_discarded() || !(document.is_object() || document.is_null())) {
    return std::nullopt;
  }
  std::vector<PhpField> fields;
  if (document.is_object()) {
    for (const auto& item : document.items()) {
      auto raw = json_member_span(text, item.key());
      fields.push_back(PhpField{item.key(), raw ? std::string(*raw) : item.value().dump()});
    }
  }
  set_field(&fields, "notify_time", Json(format_local_datetime(due_at_ms)).dump(), false);
  set_field(&fields, "dq_set_time", Json(format_local_datetime(created_at_ms)).dump(), true);
  int64_t failed = body_count(fields, "exp_notify_nums") + failed_attempts;
  if (failed > 0) {
    set_field(&fields, "exp_notify_nums", std::to_string(failed), false);
  }
  return fields;
}

std::string php_fields_json(const std::vector<PhpField>& fields) {
  std::string out = "{";
  for (const PhpField& field : fields) {
    if (out.size() > 1) {
      out += ",";
    }
    out += Json(field.name).dump() + ":" + field.json;
  }
  return out + "}";
}

}  // namespace dq

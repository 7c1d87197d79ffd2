// Implements server/legacy_fields.h.
#include "server/legacy_fields.h"

#include <cmath>
#include <cstdio>

#include "common/core/json_span.h"
#include "common/http/php_fields.h"

namespace dq {

std::string php_number_text(const Json& number) {
  if (number.is_number_integer()) {
    return number.dump();
  }
  double value = number.get<double>();
  if (!std::isfinite(value)) {
    return number.dump();
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.14G", value);
  std::string out = text;
  // PHP writes an exponent with a decimal point in the mantissa: 1.0E+20.
  size_t e = out.find('E');
  if (e != std::string::npos && out.find('.') == std::string::npos) {
    out.insert(e, ".0");
  }
  return out;
}

std::string legacy_text_field(const Json& request, const char* name) {
  auto found = request.find(name);
  if (found == request.end()) {
    return {};
  }
  if (found->is_string()) {
    return found->get<std::string>();
  }
  if (found->is_number()) {
    return php_number_text(*found);
  }
  return {};
}

std::string legacy_get_data(const Job& job) {
  auto fields = php_fields(job.body, job.due_at_ms, job.created_at_ms, job.attempts);
  std::string text = embeddable_json(job.body);
  if (!fields) {
    return text;
  }
  static const char* const kAdded[] = {"notify_time", "dq_set_time", "exp_notify_nums"};
  bool has_own = false;
  for (const char* name : kAdded) {
    has_own = has_own || json_member_span(text, name).has_value();
  }
  if (text[0] != '{' || has_own) {
    return php_fields_json(*fields);
  }
  // The usual case: the body byte for byte, with the fields appended.
  for (const PhpField& field : *fields) {
    for (const char* name : kAdded) {
      if (field.name == name) {
        text = with_raw_member(text, field.name, field.json);
      }
    }
  }
  return text;
}

}  // namespace dq

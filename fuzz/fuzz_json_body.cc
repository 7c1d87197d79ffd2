// Fuzz target: JSON request bodies. Whatever nlohmann accepts, the raw-span
// scanner (common/json_span.h) that keeps job bodies byte for byte must find
// the same "body" and "jobs" members, and the text it hands back must parse
// to the same value. What plainly_json (common/json_check.h) calls JSON,
// nlohmann must accept.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/json.h"
#include "common/json_check.h"
#include "common/json_span.h"

namespace {

void same_value(std::string_view raw, const dq::Json& expected) {
  dq::Json again = dq::Json::parse(raw, nullptr, false);
  if (again.is_discarded() || again != expected) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  dq::Json parsed = dq::Json::parse(text, nullptr, false);
  dq::embeddable_json(text);  // any stored bytes must be embeddable
  if (dq::plainly_json(text) && parsed.is_discarded()) std::abort();
  if (parsed.is_discarded()) return 0;
  if (parsed.is_object()) {
    for (const char* name : {"body", "jobs", "id"}) {
      auto span = dq::json_member_span(text, name);
      if (parsed.contains(name) != span.has_value()) std::abort();
      if (span) same_value(*span, parsed[name]);
    }
    if (auto body = dq::json_member_span(text, "body")) {
      std::string reply = dq::with_raw_member(dq::Json{{"id", "x"}}.dump(), "body", *body);
      same_value(reply, dq::Json{{"id", "x"}, {"body", parsed["body"]}});
    }
  }
  if (parsed.is_array()) {
    auto spans = dq::json_array_spans(text);
    if (!spans || spans->size() != parsed.size()) std::abort();
    for (size_t i = 0; i < spans->size(); ++i) same_value((*spans)[i], parsed[i]);
  }
  return 0;
}

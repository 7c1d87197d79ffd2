// Implements common/registry/success_rule.h.
#include "common/registry/success_rule.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "common/core/json.h"

namespace dq {
namespace {

constexpr size_t kMaxKeyBytes = 64;
constexpr size_t kMaxValueBytes = 256;

// VALUE as a number, when the whole text is one.
bool as_number(const std::string& text, double* out) {
  if (text.empty() || isspace(static_cast<unsigned char>(text[0]))) {
    return false;
  }
  char* end = nullptr;
  errno = 0;
  double number = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size()) {
    return false;
  }
  *out = number;
  return true;
}

bool value_matches(const Json& found, const std::string& expected) {
  if (found.is_string()) {
    return found.get<std::string>() == expected;
  }
  if (found.is_number()) {
    double number = 0;
    return as_number(expected, &number) && found.get<double>() == number;
  }
  return found.dump() == expected;  // true, false, null, objects and arrays
}

}  // namespace

Result<SuccessRule> parse_success_rule(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status(Code::kInvalid,
                  "'" + text + "' must be PATH=VALUE, e.g. code=0 or data.status=ok");
  }
  SuccessRule rule;
  rule.value = text.substr(eq + 1);
  if (rule.value.size() > kMaxValueBytes) {
    return Status(Code::kInvalid, "VALUE is longer than 256 bytes");
  }
  std::string path = text.substr(0, eq);
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool bad_char = false;
    for (unsigned char c : key) {
      bad_char = bad_char || c <= ' ' || c == 0x7f;
    }
    if (key.empty() || key.size() > kMaxKeyBytes || bad_char) {
      return Status(Code::kInvalid, "PATH '" + path +
                                        "' must be dot-separated keys of 1-64 bytes without "
                                        "spaces or control characters, e.g. data.code");
    }
    rule.path.push_back(key);
    if (dot == std::string::npos) {
      break;
    }
    start = dot + 1;
  }
  return rule;
}

bool response_matches(const SuccessRule& rule, const std::string& response, std::string* why) {
  Json document = Json::parse(response, nullptr, false);
  if (document.is_discarded()) {
    *why = "the answer is not JSON";
    return false;
  }
  const Json* node = &document;
  std::string walked;
  for (const std::string& key : rule.path) {
    walked += (walked.empty() ? "" : ".") + key;
    if (!node->is_object() || !node->contains(key)) {
      *why = "the answer has no " + walked;
      return false;
    }
    node = &(*node)[key];
  }
  if (value_matches(*node, rule.value)) {
    return true;
  }
  std::string shown = node->dump();
  if (shown.size() > 64) {
    shown = shown.substr(0, 64) + "...";
  }
  *why = "the answer has " + walked + "=" + shown;
  return false;
}

}  // namespace dq

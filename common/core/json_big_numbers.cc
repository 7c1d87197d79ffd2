// Implements common/core/json_big_numbers.h.
#include "common/core/json_big_numbers.h"

#include <cmath>
#include <cstdlib>

namespace dq {
namespace {

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

}  // namespace

std::string cap_big_numbers(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  while (at < text.size()) {
    char c = text[at];
    if (c == '"') {  // a string: copied as is, escapes included
      size_t end = at + 1;
      while (end < text.size() && text[end] != '"') {
        end += text[end] == '\\' ? 2 : 1;
      }
      end = std::min(end + 1, text.size());
      out.append(text.substr(at, end - at));
      at = end;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = at;
      while (end < text.size() && number_char(text[end])) {
        ++end;
      }
      std::string number(text.substr(at, end - at));
      double value = std::strtod(number.c_str(), nullptr);
      if (std::isinf(value)) {
        number = value < 0 ? "-1.7976931348623157e308" : "1.7976931348623157e308";
      }
      out += number;
      at = end;
    } else {
      out.push_back(c);
      ++at;
    }
  }
  return out;
}

Json parse_json_any_number(std::string_view text) {
  Json parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    parsed = Json::parse(cap_big_numbers(text), nullptr, false);
  }
  return parsed;
}

bool accept_json_any_number(std::string_view text) {
  return Json::accept(text) || Json::accept(cap_big_numbers(text));
}

}  // namespace dq

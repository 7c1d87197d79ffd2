// Finds value spans in JSON text by skipping over values: strings (with
// their escapes), nested objects and arrays (by depth, strings skipped
// whole), and scalars (up to the next delimiter).
#include "common/core/json_span.h"

#include "common/core/json.h"
#include "common/core/json_big_numbers.h"
#include "common/core/json_check.h"

namespace dq {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";  // nlohmann skips it too
constexpr size_t kNone = std::string_view::npos;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view text, size_t at) {
  while (at < text.size() && is_space(text[at])) {
    ++at;
  }
  return at;
}

// `at` is on the opening quote; returns the index after the closing one.
size_t skip_string(std::string_view text, size_t at) {
  for (size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;  // the escaped character, whatever it is, cannot end the string
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return kNone;
}

// `at` is on the first character of a value; returns the index after it.
size_t skip_value(std::string_view text, size_t at) {
  if (at >= text.size()) {
    return kNone;
  }
  char first = text[at];
  if (first == '"') {
    return skip_string(text, at);
  }
  if (first == '{' || first == '[') {
    int depth = 0;
    for (size_t i = at; i < text.size();) {
      char c = text[i];
      if (c == '"') {
        i = skip_string(text, i);
        if (i == kNone) {
          return kNone;
        }
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      }
      if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
      ++i;
    }
    return kNone;
  }
  size_t i = at;
  while (i < text.size() && !is_space(text[i]) && text[i] != ',' && text[i] != '}' &&
         text[i] != ']') {
    ++i;
  }
  return i == at ? kNone : i;
}

// Where the document's top-level value starts (after a BOM and whitespace).
size_t value_start(std::string_view text) {
  size_t at = text.substr(0, kByteOrderMark.size()) == kByteOrderMark ? kByteOrderMark.size() : 0;
  return skip_space(text, at);
}

// True when the quoted key `raw_key` (quotes included) names `name`.
bool key_is(std::string_view raw_key, std::string_view name) {
  std::string_view inside = raw_key.substr(1, raw_key.size() - 2);
  if (inside.find('\\') == std::string_view::npos) {
    return inside == name;
  }
  Json decoded = Json::parse(raw_key.begin(), raw_key.end(), nullptr, false);
  return decoded.is_string() && decoded.get_ref<const std::string&>() == name;
}

}  // namespace

std::optional<std::string_view> json_member_span(std::string_view object_text,
                                                 std::string_view name) {
  size_t at = value_start(object_text);
  if (at >= object_text.size() || object_text[at] != '{') {
    return std::nullopt;
  }
  at = skip_space(object_text, at + 1);
  std::optional<std::string_view> found;
  if (at < object_text.size() && object_text[at] == '}') {
    return found;
  }
  while (at < object_text.size() && object_text[at] == '"') {
    size_t key_end = skip_string(object_text, at);
    if (key_end == kNone) {
      return std::nullopt;
    }
    std::string_view key = object_text.substr(at, key_end - at);
    at = skip_space(object_text, key_end);
    if (at >= object_text.size() || object_text[at] != ':') {
      return std::nullopt;
    }
    at = skip_space(object_text, at + 1);
    size_t value_end = skip_value(object_text, at);
    if (value_end == kNone) {
      return std::nullopt;
    }
    if (key_is(key, name)) {
      found = object_text.substr(at, value_end - at);  // the last one wins
    }
    at = skip_space(object_text, value_end);
    if (at < object_text.size() && object_text[at] == '}') {
      return found;
    }
    if (at >= object_text.size() || object_text[at] != ',') {
      return std::nullopt;
    }
    at = skip_space(object_text, at + 1);
  }
  return std::nullopt;
}

std::optional<std::vector<std::string_view>> json_array_spans(std::string_view array_text) {
  size_t at = value_start(array_text);
  if (at >= array_text.size() || array_text[at] != '[') {
    return std::nullopt;
  }
  at = skip_space(array_text, at + 1);
  std::vector<std::string_view> spans;
  if (at < array_text.size() && array_text[at] == ']') {
    return spans;
  }
  while (at < array_text.size()) {
    size_t value_end = skip_value(array_text, at);
    if (value_end == kNone) {
      return std::nullopt;
    }
    spans.push_back(array_text.substr(at, value_end - at));
    at = skip_space(array_text, value_end);
    if (at < array_text.size() && array_text[at] == ']') {
      return spans;
    }
    if (at >= array_text.size() || array_text[at] != ',') {
      return std::nullopt;
    }
    at = skip_space(array_text, at + 1);
  }
  return std::nullopt;
}

std::string embeddable_json(const std::string& body) {
  // plainly_json answers most bodies in one pass; nlohmann has the last word.
  if (plainly_json(body) || (!body.empty() && accept_json_any_number(body))) {
    return body;
  }
  return Json(body).dump(-1, ' ', false, Json::error_handler_t::replace);
}

void append_json_string(std::string* out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t start = out->size();
  out->push_back('"');
  size_t run = 0;  // the first byte not yet appended: plain bytes go in runs
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x80 && byte != '"' && byte != '\\') {
      continue;
    }
    if (byte >= 0x80) {
      // Non-ASCII text: nlohmann checks it as UTF-8 and replaces what is not.
      out->resize(start);
      out->append(Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace));
      return;
    }
    out->append(text.data() + run, i - run);
    run = i + 1;
    out->push_back('\\');
    switch (byte) {
      case '"':
      case '\\':
        out->push_back(static_cast<char>(byte));
        break;
      case '\b':
        out->push_back('b');
        break;
      case '\f':
        out->push_back('f');
        break;
      case '\n':
        out->push_back('n');
        break;
      case '\r':
        out->push_back('r');
        break;
      case '\t':
        out->push_back('t');
        break;
      default:
        out->append("u00");
        out->push_back(kHex[byte >> 4]);
        out->push_back(kHex[byte & 0xF]);
    }
  }
  out->append(text.data() + run, text.size() - run);
  out->push_back('"');
}

std::string with_raw_member(std::string object_json, std::string_view name,
                            std::string_view raw_value) {
  // object_json ends with '}'; "{}" takes the member without a comma.
  object_json.pop_back();
  size_t last = object_json.find_last_not_of(" \t\r\n");
  if (last != std::string::npos && object_json[last] != '{') {
    object_json += ',';
  }
  append_json_string(&object_json, name);
  object_json += ':';
  object_json.append(raw_value);
  object_json += '}';
  return object_json;
}

}  // namespace dq

// The validating scanner of common/core/json_scan.h: a recursive descent over
// RFC 8259 with the checks nlohmann's lexer and parser make (see each
// function), answering false for anything it refuses or is not sure of.
#include "common/core/json_scan.h"

#include <cstdint>

#include "common/core/utf8.h"

namespace dq {
namespace {

constexpr int kMostDepth = 256;
// A number whose integer digits plus exponent stay under this is below
// 1e300, so a double holds it (nlohmann refuses one that becomes inf).
constexpr int64_t kMostMagnitude = 300;

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Scanner {
 public:
  explicit Scanner(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

  const char* at() const { return at_; }
  bool at_end() const { return at_ == end_; }

  void skip_space() {
    while (at_ != end_ && (*at_ == ' ' || *at_ == '\t' || *at_ == '\n' || *at_ == '\r')) {
      ++at_;
    }
  }

  bool take(char wanted) {
    if (at_ == end_ || *at_ != wanted) {
      return false;
    }
    ++at_;
    return true;
  }

  // `at_` on the opening quote. Sets *escaped when a backslash appears.
  bool string(bool* escaped) {
    ++at_;
    while (at_ != end_) {
      unsigned char c = static_cast<unsigned char>(*at_);
      if (c == '"') {
        ++at_;
        return true;
      }
      if (c == '\\') {
        *escaped = true;
        if (!escape()) {
          return false;
        }
      } else if (c < 0x20) {
        return false;  // control characters must be escaped
      } else if (c >= 0x80) {
        if (!utf8_sequence()) {
          return false;  // not well-formed UTF-8
        }
      } else {
        ++at_;
      }
    }
    return false;
  }

  // `at_` on the first character of a value.
  bool value(int depth) {
    if (at_ == end_) {
      return false;
    }
    switch (*at_) {
      case '{':
        return container(depth, '}');
      case '[':
        return container(depth, ']');
      case '"': {
        bool escaped = false;
        return string(&escaped);
      }
      case 't':
        return word("true");
      case 'f':
        return word("false");
      case 'n':
        return word("null");
      default:
        return number();
    }
  }

 private:
  // `at_` on the backslash. nlohmann takes \" \\ \/ \b \f \n \r \t and \uXXXX,
  // a high surrogate only when a \u low surrogate follows, never a lone low one.
  bool escape() {
    ++at_;
    if (at_ == end_) {
      return false;
    }
    char c = *at_++;
    if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
        c == 't') {
      return true;
    }
    if (c != 'u') {
      return false;
    }
    int unit = hex4();
    if (unit < 0) {
      return false;
    }
    if (unit >= 0xDC00 && unit <= 0xDFFF) {
      return false;
    }
    if (unit < 0xD800 || unit > 0xDBFF) {
      return true;
    }
    if (!take('\\') || !take('u')) {
      return false;
    }
    int low = hex4();
    return low >= 0xDC00 && low <= 0xDFFF;
  }

  int hex4() {
    if (end_ - at_ < 4) {
      return -1;
    }
    int unit = 0;
    for (int i = 0; i < 4; ++i) {
      int digit = hex_value(*at_++);
      if (digit < 0) {
        return -1;
      }
      unit = unit * 16 + digit;
    }
    return unit;
  }

  // `at_` on a byte >= 0x80: one well-formed UTF-8 sequence (RFC 3629, the
  // ranges nlohmann's lexer checks: no overlong forms, surrogates or code
  // points past U+10FFFF).
  bool utf8_sequence() {
    size_t length = utf8_sequence_length(std::string_view(at_, static_cast<size_t>(end_ - at_)), 0);
    at_ += length;
    return length > 0;
  }

  bool word(std::string_view text) {
    if (static_cast<size_t>(end_ - at_) < text.size() ||
        std::string_view(at_, text.size()) != text) {
      return false;
    }
    at_ += text.size();
    return true;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and small enough in
  // magnitude to be sure a double holds it.
  bool number() {
    take('-');
    if (at_ == end_ || !is_digit(*at_)) {
      return false;
    }
    int64_t integer_digits = 0;
    if (*at_ == '0') {
      ++at_;
      integer_digits = 1;
    } else {
      while (at_ != end_ && is_digit(*at_)) {
        ++at_;
        ++integer_digits;
      }
    }
    if (take('.')) {
      if (at_ == end_ || !is_digit(*at_)) {
        return false;
      }
      while (at_ != end_ && is_digit(*at_)) {
        ++at_;
      }
    }
    int64_t exponent = 0;
    if (at_ != end_ && (*at_ == 'e' || *at_ == 'E')) {
      ++at_;
      bool negative = take('-');
      if (!negative) {
        take('+');
      }
      if (at_ == end_ || !is_digit(*at_)) {
        return false;
      }
      while (at_ != end_ && is_digit(*at_)) {
        if (exponent < 100000) {
          exponent = exponent * 10 + (*at_ - '0');
        }
        ++at_;
      }
      if (negative) {
        exponent = -exponent;
      }
    }
    return integer_digits + exponent <= kMostMagnitude;
  }

  // `at_` on '{' or '['.
  bool container(int depth, char close) {
    if (depth >= kMostDepth) {
      return false;
    }
    ++at_;
    skip_space();
    if (take(close)) {
      return true;
    }
    while (true) {
      if (close == '}') {
        if (at_ == end_ || *at_ != '"') {
          return false;
        }
        bool escaped = false;
        if (!string(&escaped)) {
          return false;
        }
        skip_space();
        if (!take(':')) {
          return false;
        }
        skip_space();
      }
      if (!value(depth + 1)) {
        return false;
      }
      skip_space();
      if (take(close)) {
        return true;
      }
      if (!take(',')) {
        return false;
      }
      skip_space();
    }
  }

  const char* at_;
  const char* end_;
};

}  // namespace

std::optional<JsonObjectScan> scan_json_object(std::string_view text) {
  Scanner scan(text);
  scan.skip_space();
  if (!scan.take('{')) {
    return std::nullopt;  // also a byte order mark: not sure
  }
  JsonObjectScan result;
  scan.skip_space();
  if (!scan.take('}')) {
    while (true) {
      if (result.count == JsonObjectScan::kMostMembers) {
        return std::nullopt;
      }
      JsonMember& member = result.members[result.count++];
      const char* key_start = scan.at();
      if (scan.at_end() || *key_start != '"') {
        return std::nullopt;
      }
      member.key_escaped = false;
      if (!scan.string(&member.key_escaped)) {
        return std::nullopt;
      }
      member.key = std::string_view(key_start + 1, static_cast<size_t>(scan.at() - key_start - 2));
      scan.skip_space();
      if (!scan.take(':')) {
        return std::nullopt;
      }
      scan.skip_space();
      const char* value_start = scan.at();
      if (!scan.value(1)) {
        return std::nullopt;
      }
      member.value = std::string_view(value_start, static_cast<size_t>(scan.at() - value_start));
      scan.skip_space();
      if (scan.take('}')) {
        break;
      }
      if (!scan.take(',')) {
        return std::nullopt;
      }
      scan.skip_space();
    }
  }
  scan.skip_space();
  if (!scan.at_end()) {
    return std::nullopt;  // nlohmann parses strictly: nothing may follow
  }
  return result;
}

bool json_string_is_plain(std::string_view text) {
  return text.size() >= 2 && text.front() == '"' && text.find('\\', 1) == std::string_view::npos;
}

}  // namespace dq

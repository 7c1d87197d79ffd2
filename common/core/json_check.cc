// One pass over the text with a small stack of open containers; strings are
// checked for control characters and well-formed UTF-8 as nlohmann's lexer
// checks them (Unicode Table 3-7).
#include "common/core/json_check.h"

#include <cstddef>

#include "common/core/utf8.h"

namespace dq {
namespace {

constexpr size_t kMaxDepth = 256;
constexpr size_t kMaxNumber = 300;  // longer literals may overflow a double

class Checker {
 public:
  explicit Checker(std::string_view text) : text_(text) {}

  bool document() {
    space();
    if (!value()) {
      return false;
    }
    space();
    return at_ == text_.size();
  }

 private:
  bool more() const { return at_ < text_.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(text_[at_]); }

  // The byte that closes a container opened with `open` ('{' or '[').
  static unsigned char closer(unsigned char open) { return open == '{' ? '}' : ']'; }

  void space() {
    while (more() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++at_;
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) {
      return false;
    }
    at_ += word.size();
    return true;
  }

  // Containers are walked with an explicit stack: depth costs no recursion.
  bool value() {
    unsigned char open[kMaxDepth];
    size_t depth = 0;
    while (true) {
      space();
      if (!more()) {
        return false;
      }
      unsigned char c = peek();
      if (c == '{' || c == '[') {
        if (depth == kMaxDepth) {
          return false;
        }
        open[depth++] = c;
        ++at_;
        space();
        if (more() && peek() == closer(c)) {
          ++at_;
          --depth;
        } else {
          if (c == '{' && !member_name()) {
            return false;
          }
          continue;  // the first value
        }
      } else if (!scalar()) {
        return false;
      }
      // After a value: close containers, or go on after a comma.
      while (true) {
        if (depth == 0) {
          return true;
        }
        space();
        if (!more()) {
          return false;
        }
        if (peek() == closer(open[depth - 1])) {
          ++at_;
          --depth;
          continue;
        }
        if (peek() != ',') {
          return false;
        }
        ++at_;
        if (open[depth - 1] == '{' && !member_name()) {
          return false;
        }
        break;
      }
    }
  }

  // `"name" :` of an object member.
  bool member_name() {
    space();
    if (!more() || peek() != '"' || !string()) {
      return false;
    }
    space();
    if (!more() || peek() != ':') {
      return false;
    }
    ++at_;
    return true;
  }

  bool scalar() {
    unsigned char c = peek();
    if (c == '"') {
      return string();
    }
    if (c == 't') {
      return literal("true");
    }
    if (c == 'f') {
      return literal("false");
    }
    if (c == 'n') {
      return literal("null");
    }
    return number();
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)? ; an exponent is left to nlohmann.
  bool number() {
    size_t start = at_;
    if (more() && peek() == '-') {
      ++at_;
    }
    if (!more() || peek() < '0' || peek() > '9') {
      return false;
    }
    if (peek() == '0') {
      ++at_;
    } else {
      while (more() && peek() >= '0' && peek() <= '9') {
        ++at_;
      }
    }
    if (more() && peek() == '.') {
      ++at_;
      if (!more() || peek() < '0' || peek() > '9') {
        return false;
      }
      while (more() && peek() >= '0' && peek() <= '9') {
        ++at_;
      }
    }
    if (more() && (peek() == 'e' || peek() == 'E')) {
      return false;
    }
    return at_ - start <= kMaxNumber;
  }

  // On the opening quote; ends after the closing one.
  bool string() {
    ++at_;
    while (more()) {
      unsigned char c = peek();
      if (c == '"') {
        ++at_;
        return true;
      }
      if (c < 0x20) {
        return false;
      }
      if (c == '\\') {
        ++at_;
        if (!more()) {
          return false;
        }
        switch (peek()) {
          case '"':
          case '\\':
          case '/':
          case 'b':
          case 'f':
          case 'n':
          case 'r':
          case 't':
            ++at_;
            continue;
          default:
            return false;  // \u (surrogate pairs) and invalid escapes
        }
      }
      if (c < 0x80) {
        ++at_;
      } else if (!utf8_sequence()) {
        return false;
      }
    }
    return false;
  }

  bool utf8_sequence() {
    size_t length = utf8_sequence_length(text_, at_);
    at_ += length;
    return length > 0;
  }

  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

bool plainly_json(std::string_view text) { return Checker(text).document(); }

}  // namespace dq

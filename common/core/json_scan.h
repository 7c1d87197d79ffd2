// A validating scan of a JSON object's top level, for requests whose few
// members are read once: no document is built (nlohmann's DOM of a small
// add request cost ~12,600 instructions, most of it allocations).
//
// The scan is conservative: it answers only for text that nlohmann::json::parse
// accepts (same grammar, strict UTF-8, \u surrogate pairs, numbers that stay
// finite), and says "not sure" (nullopt) for anything else, including valid
// text it does not handle cheaply. A caller then parses the usual way, so
// every refusal and every unusual input keeps nlohmann's behaviour.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace dq {

struct JsonMember {
  std::string_view key;    // the text between the key's quotes, escapes not decoded
  bool key_escaped;        // the key holds a backslash: `key` is not its name
  std::string_view value;  // the value's raw text, without the whitespace around it
};

struct JsonObjectScan {
  static constexpr size_t kMostMembers = 8;
  std::array<JsonMember, kMostMembers> members;
  size_t count = 0;
};

// The top-level members of `text`, in order (duplicates kept), when `text` is
// one JSON object nlohmann would accept. nullopt when it is not, or when the
// scan cannot be sure cheaply: more than kMostMembers members, nesting
// deeper than 256, a number of more than ~300 decimal digits of magnitude
// (nlohmann refuses one that overflows a double), a byte order mark.
std::optional<JsonObjectScan> scan_json_object(std::string_view text);

// True when `text` (one JSON string with its quotes, as scanned above)
// holds no escapes: its bytes between the quotes are its value.
bool json_string_is_plain(std::string_view text);

}  // namespace dq

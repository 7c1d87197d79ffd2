// Raw JSON text: where a value sits inside a document, and how to put raw
// text back into one. A job's body is stored and sent back exactly as the
// producer wrote it; parsing and re-dumping it would change key order,
// number spelling ("1e2" -> "100.0") and escapes ("\u00e9" -> "é").
//
// The scanner does not validate: give it text nlohmann already accepted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dq {

// The raw text of the value of the top-level member `name` of the JSON
// object `object_text`, without the whitespace around it. A key written with
// escapes ("b\u006fdy") matches its decoded name. Of duplicate keys the last
// one wins, as when nlohmann parses the object. nullopt when the text is not
// an object or has no such member.
std::optional<std::string_view> json_member_span(std::string_view object_text,
                                                 std::string_view name);

// The raw text of each element of the JSON array `array_text`, in order;
// nullopt when the text is not an array.
std::optional<std::vector<std::string_view>> json_array_spans(std::string_view array_text);

// A stored body as JSON text to embed in a reply: the text itself when it
// is JSON, else the text as a JSON string (a record written by an older tool).
std::string embeddable_json(const std::string& body);

// Appends `text` as a JSON string, the bytes dump_json (nlohmann with
// error_handler_t::replace) writes for it: \" \\ \b \f \n \r \t, other
// control characters as \u00XX, UTF-8 as it is, bytes that are not UTF-8 as
// U+FFFD. The one string escaper for JSON written by hand.
void append_json_string(std::string* out, std::string_view text);

// `object_json` (a serialized JSON object) with "name":raw_value added as its
// last member. raw_value must be valid JSON text.
std::string with_raw_member(std::string object_json, std::string_view name,
                            std::string_view raw_value);

}  // namespace dq

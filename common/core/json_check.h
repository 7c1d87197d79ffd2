// A quick check that text is JSON, without building a document: every
// callback embeds the job's stored body, and a full nlohmann parse of it on
// every attempt cost more than the rest of the callback's JSON.
#pragma once

#include <string_view>

namespace dq {

// True only when `text` is a JSON document nlohmann accepts. It answers
// false for what it does not check itself (a byte order mark, \u escapes,
// numbers with an exponent or of more than 300 characters, nesting deeper
// than 256): callers then ask Json::accept, so false means "not known".
bool plainly_json(std::string_view text);

}  // namespace dq

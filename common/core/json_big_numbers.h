// JSON puts no limit on a number's size, but nlohmann refuses one a double
// cannot hold ("number overflow" on 1e400). Bodies are kept byte for byte, so
// such a number must not make a request or a stored body "not JSON". These
// parse (or check) a copy of the text in which each such number is replaced
// by the largest double of its sign; a delay or at of that size is then
// refused as too far ahead, with a clear message.
#pragma once

#include <string>
#include <string_view>

#include "common/core/json.h"

namespace dq {

// The text with every number too large for a double written as +-DBL_MAX.
std::string cap_big_numbers(std::string_view text);

// Json::parse(text, nullptr, false), retried on cap_big_numbers(text) when
// the text was refused: a discarded value only for text that is not JSON.
Json parse_json_any_number(std::string_view text);

// Json::accept, with numbers of any size.
bool accept_json_any_number(std::string_view text);

}  // namespace dq

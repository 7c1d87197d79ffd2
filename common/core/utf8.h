// Well-formed UTF-8 (RFC 3629), one sequence at a time: the check that job
// ids and both JSON scanners (common/core/json_scan.h, common/core/json_check.h) make
// of every byte >= 0x80, as nlohmann's lexer does.
#pragma once

#include <cstddef>
#include <string_view>

namespace dq {

// The length (2-4) of the well-formed sequence that starts text[at], a byte
// >= 0x80; 0 when there is none there: a continuation or overlong lead
// byte (C0, C1, E0 80..9F, F0 80..8F), a surrogate (ED A0..BF), a code point
// past U+10FFFF (F4 90.., F5..FF) or a sequence cut short by the text's end.
size_t utf8_sequence_length(std::string_view text, size_t at);

}  // namespace dq

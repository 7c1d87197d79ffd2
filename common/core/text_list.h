// Comma-separated lists in config values and settings ("a, b,c").
#pragma once

#include <string>
#include <vector>

namespace dq {

// The items, trimmed of spaces and tabs; empty items are skipped.
std::vector<std::string> split_list(const std::string& text);

// The items joined with `separator` between them.
std::string join_list(const std::vector<std::string>& items, const std::string& separator);

}  // namespace dq

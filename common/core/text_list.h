// Comma-separated lists in config values and settings ("a, b,c").
#pragma once

#include <string>
#include <vector>

namespace dq {

// The items, trimmed of spaces and tabs; empty items are skipped.
std::vector<std::string> split_list(const std::string& text);

}  // namespace dq

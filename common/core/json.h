// JSON for the whole project: nlohmann::json (Debian's nlohmann-json3-dev).
#pragma once

#include <nlohmann/json.hpp>

namespace dq {
using Json = nlohmann::json;
}  // namespace dq

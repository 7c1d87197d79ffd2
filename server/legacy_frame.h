// The legacy protocol's framing, with no I/O: a frame is 4 ASCII decimal
// digits giving the JSON length in bytes, then the JSON. Used by
// legacy_server.cc on its input and output buffers, and by tests.
#pragma once

#include <cstddef>
#include <string>

#include "common/core/json.h"

namespace dq {

inline constexpr size_t kLegacyHeaderBytes = 4;
inline constexpr size_t kLegacyMaxJsonBytes = 9999;  // the most 4 digits can say

enum class FrameResult {
  kNeedMore,   // no whole frame yet: read more
  kFrame,      // one frame: `json`, `consumed` bytes long
  kBadHeader,  // the header is not 4 digits: where the next frame starts is unknowable
  kTooLarge,   // announced length over the limit, or a header of more than 4 digits
};

struct ParsedFrame {
  FrameResult result = FrameResult::kNeedMore;
  size_t consumed = 0;  // kFrame: bytes to drop from the input
  std::string json;     // kFrame: the JSON text (not yet parsed)
  std::string reason;   // kBadHeader / kTooLarge: what to tell the client
};

// Looks at the first bytes received on a connection. max_json_bytes caps the
// announced length (at most kLegacyMaxJsonBytes). A header followed by a 5th
// digit means the client tried to announce more than 9999 bytes: kTooLarge.
ParsedFrame parse_legacy_frame(const char* data, size_t length, size_t max_json_bytes);

// Frames JSON text: "0042{...}". Precondition: json.size() <= kLegacyMaxJsonBytes.
std::string frame_legacy_json(const std::string& json);

// A framed reply {"code":1,"msg":"succ","data":data} or {"code":0,"msg":reason,"data":[]}.
// A reply too long for 4 digits (a get of a large body) becomes a code 0
// reply saying so, so the stream never carries a frame it cannot describe.
std::string legacy_success_frame(const Json& data);
std::string legacy_failure_frame(const std::string& reason);

}  // namespace dq

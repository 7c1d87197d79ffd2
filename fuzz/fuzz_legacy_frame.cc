// Fuzz target: the legacy protocol's frame parser (server/legacy_frame.h) on
// any bytes, and the framing of whatever JSON it yields.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "server/legacy_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  for (size_t limit : {size_t{16}, size_t{1024}, dq::kLegacyMaxJsonBytes}) {
    dq::ParsedFrame frame = dq::parse_legacy_frame(text, size, limit);
    if (frame.result == dq::FrameResult::kFrame) {
      // A frame never claims more than it was given, nor more than the limit.
      if (frame.consumed > size || frame.json.size() > limit) std::abort();
      if (frame.consumed != dq::kLegacyHeaderBytes + frame.json.size()) std::abort();
      if (dq::frame_legacy_json(frame.json).size() != frame.consumed) std::abort();
    }
  }
  return 0;
}

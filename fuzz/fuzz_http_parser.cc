// Fuzz target: the HTTP request parser (server/http_parser.h) on any bytes,
// fed whole and again one byte at a time: both feeds must find the same
// requests (heads and bodies) and end the same way, and a request never
// claims more bytes than it was given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_parser.h"

namespace {

struct Outcome {
  std::vector<std::string> requests;  // method, target, flags and body of each
  int error = 0;
};

Outcome run(std::string_view bytes, size_t step) {
  dq::HttpLimits limits;
  limits.max_head_bytes = 512;
  limits.max_body_bytes = 1024;
  dq::HttpParser parser(limits);
  std::string buffer;
  Outcome out;
  for (size_t at = 0; at < bytes.size() && out.error == 0; at += step) {
    buffer.append(bytes.substr(at, step));
    for (;;) {
      dq::HttpParse result = parser.parse(buffer);
      if (result == dq::HttpParse::kNeedMore) break;
      if (result == dq::HttpParse::kError) {
        out.error = parser.error_status();
        if (out.error < 400 || out.error > 599 || parser.error().empty()) std::abort();
        break;
      }
      if (parser.consumed() == 0 || parser.consumed() > buffer.size()) std::abort();
      if (parser.body().size() > limits.max_body_bytes) std::abort();
      const dq::HttpRequestHead& head = parser.head();
      out.requests.push_back(head.method + " " + head.target + " " +
                             std::to_string(head.minor_version) + (head.keep_alive ? "k" : "-") +
                             (head.chunked ? "c" : "-") + "\n" + parser.body());
      buffer.erase(0, parser.consumed());
      parser.reset();
      if (buffer.empty()) break;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Outcome whole = run(bytes, size == 0 ? 1 : size);
  Outcome bytewise = run(bytes, 1);
  // A head over the limit may be seen at a different point (431 either way),
  // otherwise the split of reads changes nothing.
  if (whole.requests != bytewise.requests) std::abort();
  if (whole.error != bytewise.error) std::abort();
  return 0;
}

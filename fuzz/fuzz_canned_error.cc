// Fuzz target: the HTTP API's rewrite of libevent's HTML error pages into
// JSON (server/request_limits.h) on any output buffer contents, with and
// without a canned page at its end.
#include <event2/buffer.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "server/request_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::map<int, std::string> explain = {{413, "limit"}, {400, "head"}};
  std::string text(reinterpret_cast<const char*>(data), size);
  for (const std::string& tail : {std::string(), std::string("</BODY></HTML>\n")}) {
    evbuffer* output = evbuffer_new();
    evbuffer_add(output, text.data(), text.size());
    evbuffer_add(output, tail.data(), tail.size());
    size_t before = evbuffer_get_length(output);
    bool rewritten = dq::rewrite_canned_error(output, explain);
    if (!rewritten && evbuffer_get_length(output) != before) std::abort();  // untouched
    evbuffer_free(output);
  }
  return 0;
}

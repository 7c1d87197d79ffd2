// Fuzz target: the callback URL rules (common/registry/callback_url.h). Any text is
// either refused with a message or parsed into http/https, a host and a port
// in 1..65535; an accepted URL parses the same way again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/registry/callback_url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string url(reinterpret_cast<const char*>(data), size);
  auto parsed = dq::parse_callback_url(url);
  dq::Status valid = dq::validate_callback_url(url);
  if (!parsed.is_ok()) {
    if (parsed.status().message().empty() || valid.is_ok()) std::abort();
    return 0;
  }
  if (parsed->scheme != "http" && parsed->scheme != "https") std::abort();
  if (parsed->port < 1 || parsed->port > 65535) std::abort();
  if (!valid.is_ok() && valid.message().empty()) std::abort();
  return 0;
}

// Implements common/registry/receiver.h.
#include "common/registry/receiver.h"

#include "common/registry/callback_url.h"

namespace dq {

std::string callback_receiver(const std::string& url) {
  auto parsed = parse_callback_url(url);
  if (!parsed.is_ok()) {
    return "";
  }
  std::string host =
      parsed->host.find(':') != std::string::npos ? "[" + parsed->host + "]" : parsed->host;
  return host + ":" + std::to_string(parsed->port);
}

}  // namespace dq

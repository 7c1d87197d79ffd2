// Implements common/registry/receiver.h.
#include "common/registry/receiver.h"

#include "common/registry/callback_url.h"

namespace dq {
namespace {

constexpr const char* kHttpsPrefix = "https://";

// The URL's path without query or fragment; "/" when it has none.
std::string url_path(const std::string& url) {
  size_t scheme_end = url.find("://");
  size_t authority = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  size_t slash = url.find_first_of("/?#", authority);
  if (slash == std::string::npos || url[slash] != '/') {
    return "/";
  }
  size_t end = url.find_first_of("?#", slash);
  return url.substr(slash, end == std::string::npos ? std::string::npos : end - slash);
}

}  // namespace

std::string callback_receiver(const std::string& url) {
  auto parsed = parse_callback_url(url);
  if (!parsed.is_ok()) {
    return "";
  }
  std::string host =
      parsed->host.find(':') != std::string::npos ? "[" + parsed->host + "]" : parsed->host;
  return host + ":" + std::to_string(parsed->port);
}

std::string callback_endpoint(const std::string& url) {
  auto parsed = parse_callback_url(url);
  if (!parsed.is_ok()) {
    return "";
  }
  std::string prefix = parsed->scheme == "https" ? kHttpsPrefix : "";
  return prefix + callback_receiver(url) + url_path(url);
}

std::string circuit_receiver(const std::string& circuit_name) {
  std::string rest = circuit_name;
  if (rest.rfind(kHttpsPrefix, 0) == 0) {
    rest = rest.substr(std::string(kHttpsPrefix).size());
  }
  return rest.substr(0, rest.find('/'));
}

bool is_endpoint_circuit(const std::string& circuit_name) {
  return circuit_name.find('/') != std::string::npos;
}

}  // namespace dq

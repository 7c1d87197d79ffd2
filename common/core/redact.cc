// Implements common/core/redact.h.
#include "common/core/redact.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace dq {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Where the authority of a URL starts (after "scheme://"); npos for none.
size_t authority_start(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos ||
      url.substr(0, scheme).find_first_of("/?#") != std::string_view::npos) {
    return std::string_view::npos;
  }
  return scheme + 3;
}

}  // namespace

bool is_credential_name(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kParts = {"token", "secret", "pass", "pwd",
                                                              "key",   "auth",   "sig",  "session",
                                                              "csrf",  "cred",   "jwt",  "cookie"};
  std::string lowered = lower(name);
  if (lowered == "code") {
    return true;
  }
  return std::any_of(kParts.begin(), kParts.end(), [&](std::string_view part) {
    return lowered.find(part) != std::string::npos;
  });
}

std::string redact_url(std::string_view url) {
  std::string out;
  out.reserve(url.size());
  size_t start = authority_start(url);
  size_t rest = 0;
  if (start != std::string_view::npos) {
    size_t end = url.find_first_of("/?#", start);
    std::string_view authority =
        url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    size_t at = authority.rfind('@');
    out.append(url.substr(0, start));
    if (at != std::string_view::npos) {
      std::string_view user = authority.substr(0, at);
      size_t colon = user.find(':');
      out.append(user.substr(0, colon));
      if (colon != std::string_view::npos) {
        out.append(":");
        out.append(kRedacted);
      }
      out.append(authority.substr(at));
    } else {
      out.append(authority);
    }
    rest = start + authority.size();
  }
  size_t query = url.find('?', rest);
  if (query == std::string_view::npos) {
    out.append(url.substr(rest));
    return out;
  }
  out.append(url.substr(rest, query + 1 - rest));
  size_t fragment = url.find('#', query);
  std::string_view params =
      url.substr(query + 1, fragment == std::string_view::npos ? std::string_view::npos
                                                               : fragment - query - 1);
  size_t at = 0;
  while (at <= params.size()) {
    size_t amp = params.find('&', at);
    std::string_view param = params.substr(at, amp == std::string_view::npos ? amp : amp - at);
    size_t equals = param.find('=');
    std::string_view name = param.substr(0, equals);
    if (equals != std::string_view::npos && is_credential_name(name)) {
      out.append(name);
      out.append("=");
      out.append(kRedacted);
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) {
      break;
    }
    out.append("&");
    at = amp + 1;
  }
  if (fragment != std::string_view::npos) {
    out.append(url.substr(fragment));
  }
  return out;
}

std::string url_origin(std::string_view url) {
  size_t start = authority_start(url);
  if (start == std::string_view::npos) {
    return "(a URL)";
  }
  size_t end = url.find_first_of("/?#", start);
  std::string_view authority =
      url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  std::string out(url.substr(0, start));
  out.append(authority);
  if (end != std::string_view::npos && end + 1 < url.size()) {
    out.append("/...");
  }
  return out;
}

std::string redact_text(std::string_view text, std::string_view url) {
  std::string out(text);
  if (url.empty()) {
    return out;
  }
  std::string origin = url_origin(url);
  for (size_t at = out.find(url); at != std::string::npos; at = out.find(url, at + origin.size())) {
    out.replace(at, url.size(), origin);
  }
  return out;
}

std::string redact_shard_text(std::string_view shard) {
  if (authority_start(shard) != std::string_view::npos && shard.find('@') != std::string::npos) {
    return redact_url(shard);
  }
  std::string_view bare = shard;
  size_t prefix = 0;
  if (bare.substr(0, 8) == "redis://") {
    prefix = 8;
  }
  // host:port:password (IPv6 hosts are bracketed): the third part is the password.
  size_t host_end = bare.size() > prefix && bare[prefix] == '[' ? bare.find(']', prefix) : prefix;
  if (host_end == std::string_view::npos) {
    return std::string(shard);
  }
  size_t first = bare.find(':', host_end);
  size_t second = first == std::string_view::npos ? first : bare.find(':', first + 1);
  if (second == std::string_view::npos) {
    return std::string(shard);
  }
  return std::string(bare.substr(0, second + 1)) + std::string(kRedacted);
}

}  // namespace dq

// Implements the callback URL rules (see callback_url.h): URL parsing, the
// address comparisons (this machine's addresses count as one when a port is
// compared), and the libcurl open-socket hook that applies them after DNS.
#include "common/registry/callback_url.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/core/redact.h"

namespace dq {
namespace {

constexpr size_t kMaxUrlBytes = 2048;

Status invalid(const char* field, const std::string& why) {
  return Status(Code::kInvalid, std::string(field) + ": " + why);
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

std::string lower(std::string text) {
  for (char& c : text) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return text;
}

// "Example.COM." -> "example.com", "[::1]" -> "::1".
std::string normal_host(std::string host) {
  host = lower(std::move(host));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.size() > 1 && host.back() == '.') {
    host.pop_back();
  }
  return host;
}

IpAddress from_v4(const in_addr& v4) {
  IpAddress address;
  address.family = AF_INET;
  std::memcpy(address.bytes, &v4, 4);
  return address;
}

IpAddress from_v6(const in6_addr& v6) {
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    in_addr v4;
    std::memcpy(&v4, v6.s6_addr + 12, 4);
    return from_v4(v4);
  }
  IpAddress address;
  address.family = AF_INET6;
  std::memcpy(address.bytes, &v6, 16);
  return address;
}

bool from_sockaddr(const sockaddr* socket_address, IpAddress* address, int* port) {
  if (socket_address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(socket_address);
    *address = from_v4(v4->sin_addr);
    if (port) {
      *port = ntohs(v4->sin_port);
    }
    return true;
  }
  if (socket_address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(socket_address);
    *address = from_v6(v6->sin6_addr);
    if (port) {
      *port = ntohs(v6->sin6_port);
    }
    return true;
  }
  return false;
}

// An address written as the host: IPv6 (a zone, "fe80::1%25eth0", dropped), or IPv4 in any form
// the resolver takes ("2852039166", "0xa9.0xfe.1.1", "127.1").
bool parse_ip(const std::string& host, IpAddress* address) {
  if (host.find(':') != std::string::npos) {
    in6_addr v6;
    std::string bare = host.substr(0, host.find('%'));
    if (inet_pton(AF_INET6, bare.c_str(), &v6) != 1) {
      return false;
    }
    *address = from_v6(v6);
    return true;
  }
  if (host.empty() || host.find_first_not_of("0123456789abcdefx.") != std::string::npos) {
    return false;
  }
  in_addr v4;
  if (inet_aton(host.c_str(), &v4) == 0) {
    return false;
  }
  *address = from_v4(v4);
  return true;
}

bool is_localhost_name(const std::string& host) {
  return host == "localhost" ||
         (host.size() > 10 && host.compare(host.size() - 10, 10, ".localhost") == 0);
}

// What a host stands for without asking DNS: its literal address, or the
// loopback addresses for localhost; empty for other names.
std::vector<IpAddress> literal_addresses(const std::string& host) {
  IpAddress address;
  if (parse_ip(host, &address)) {
    return {address};
  }
  if (!is_localhost_name(host)) {
    return {};
  }
  IpAddress v4;
  IpAddress v6;
  parse_ip("127.0.0.1", &v4);
  parse_ip("::1", &v6);
  return {v4, v6};
}

bool is_link_local(const IpAddress& address) {
  if (address.family == AF_INET) {
    return address.bytes[0] == 169 && address.bytes[1] == 254;
  }
  return address.bytes[0] == 0xfe && (address.bytes[1] & 0xc0) == 0x80;
}

bool is_wildcard_host(const std::string& host) {
  return host.empty() || host == "*" || host == "0.0.0.0" || host == "::";
}

std::vector<IpAddress> interface_addresses() {
  std::vector<IpAddress> found;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return found;
  }
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    IpAddress address;
    if (entry->ifa_addr != nullptr && from_sockaddr(entry->ifa_addr, &address, nullptr)) {
      found.push_back(address);
    }
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

bool IpAddress::operator==(const IpAddress& other) const {
  return family == other.family && std::memcmp(bytes, other.bytes, sizeof(bytes)) == 0;
}

std::string IpAddress::text() const {
  char buffer[INET6_ADDRSTRLEN] = {0};
  inet_ntop(family, bytes, buffer, sizeof(buffer));
  return family == AF_INET6 ? "[" + std::string(buffer) + "]" : buffer;
}

Result<CallbackUrl> parse_callback_url(const std::string& url, const char* field) {
  if (url.size() > kMaxUrlBytes) {
    return invalid(field, "longer than 2048 bytes");
  }
  for (unsigned char c : url) {
    if (c <= ' ' || c == 0x7f) {
      return invalid(field, "contains a space or control character");
    }
  }
  CallbackUrl parsed;
  size_t scheme_end = 0;
  std::string scheme = lower(url.substr(0, url.find("://")));
  if (url.find("://") != std::string::npos && (scheme == "http" || scheme == "https")) {
    parsed.scheme = scheme;
    scheme_end = scheme.size() + 3;
  } else {
    return invalid(field, "'" + redact_url(url) + "' must start with http:// or https://");
  }
  std::string authority = url.substr(scheme_end, url.find_first_of("/?#", scheme_end) - scheme_end);
  size_t at = authority.rfind('@');  // drop user:password@
  if (at != std::string::npos) {
    authority = authority.substr(at + 1);
  }
  std::string host = authority;
  std::string port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    size_t close = authority.find(']');
    if (close == std::string::npos) {
      return invalid(field, "'" + redact_url(url) + "' has an unclosed [IPv6] host");
    }
    host = authority.substr(0, close + 1);
    std::string rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      return invalid(field, "'" + redact_url(url) + "' has a malformed host");
    }
    has_port = !rest.empty();
    if (has_port) {
      port = rest.substr(1);
    }
  } else if (size_t colon = authority.find(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    has_port = true;
  }
  if (host.empty() || host == "[]") {
    return invalid(field, "'" + redact_url(url) + "' has no host");
  }
  if (has_port &&
      (!all_digits(port) || port.size() > 5 || std::stoi(port) < 1 || std::stoi(port) > 65535)) {
    return invalid(field, "'" + redact_url(url) + "' has a bad port");
  }
  parsed.host = normal_host(host);
  parsed.port = has_port ? std::stoi(port) : (parsed.scheme == "https" ? 443 : 80);
  return parsed;
}

Status validate_callback_url(const std::string& url, const char* field) {
  auto parsed = parse_callback_url(url, field);
  if (!parsed.is_ok()) {
    return parsed.status();
  }
  for (const IpAddress& address : literal_addresses(parsed->host)) {
    if (is_link_local(address)) {
      return invalid(field, "'" + redact_url(url) + "' is a link-local address (" + address.text() +
                                "), where cloud metadata services answer; refused");
    }
  }
  return Status::ok();
}

CallbackPolicy CallbackPolicy::from_config(const Config& config) {
  CallbackPolicy policy;
  for (const auto& shard : config.shards) {
    for (const auto& endpoint : configured_endpoints(shard)) {
      policy.forbid(endpoint.host, endpoint.port, "Redis shard " + shard.name());
    }
  }
  std::string host;
  int port = 0;
  if (parse_host_port(config.server_listen, &host, &port)) {
    policy.forbid(host, port, "dq's API listen address " + config.server_listen);
  }
  if (!config.legacy_listen.empty() && parse_host_port(config.legacy_listen, &host, &port)) {
    policy.forbid(host, port, "dq's legacy protocol listen address " + config.legacy_listen);
  }
  if (!config.admin_listen.empty() && parse_host_port(config.admin_listen, &host, &port)) {
    policy.forbid(host, port, "dq's admin page listen address " + config.admin_listen);
  }
  policy.allow_only(config.callback_allow_hosts);
  return policy;
}

void CallbackPolicy::forbid(const std::string& host, int port, const std::string& what) {
  if (own_addresses_.empty()) {
    own_addresses_ = interface_addresses();
  }
  Forbidden forbidden;
  forbidden.what = what;
  forbidden.host = normal_host(host);
  forbidden.port = port;
  forbidden.wildcard = is_wildcard_host(forbidden.host);
  forbidden.addresses = literal_addresses(forbidden.host);
  if (!forbidden.wildcard && forbidden.addresses.empty()) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(forbidden.host.c_str(), nullptr, &hints, &found) == 0) {
      for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
        IpAddress address;
        if (from_sockaddr(entry->ai_addr, &address, nullptr)) {
          forbidden.addresses.push_back(address);
        }
      }
      freeaddrinfo(found);
    }
  }
  forbidden_.push_back(std::move(forbidden));
}

void CallbackPolicy::allow_only(const std::vector<std::string>& hosts) {
  allow_hosts_.clear();
  for (const auto& host : hosts) {
    allow_hosts_.push_back(normal_host(host));
  }
}

bool CallbackPolicy::this_machine(const IpAddress& address) const {
  static const uint8_t kZero[16] = {0};
  if (address.family == AF_INET) {
    if (address.bytes[0] == 127 || std::memcmp(address.bytes, kZero, 4) == 0) {
      return true;
    }
  } else {
    static const uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (std::memcmp(address.bytes, kZero, 16) == 0 ||
        std::memcmp(address.bytes, kLoopback, 16) == 0) {
      return true;
    }
  }
  return std::find(own_addresses_.begin(), own_addresses_.end(), address) != own_addresses_.end();
}

// Same port, and the same address, or both on this machine (a listener on
// 127.0.0.1 or 0.0.0.0 is reached through any local address).
bool CallbackPolicy::matches(const Forbidden& forbidden, const IpAddress& address, int port) const {
  if (port != forbidden.port) {
    return false;
  }
  if (std::find(forbidden.addresses.begin(), forbidden.addresses.end(), address) !=
      forbidden.addresses.end()) {
    return true;
  }
  if (!this_machine(address)) {
    return false;
  }
  return forbidden.wildcard ||
         std::any_of(forbidden.addresses.begin(), forbidden.addresses.end(),
                     [this](const IpAddress& own) { return this_machine(own); });
}

Status CallbackPolicy::check_host(const CallbackUrl& url, const char* field) const {
  if (allow_hosts_.empty() ||
      std::find(allow_hosts_.begin(), allow_hosts_.end(), url.host) != allow_hosts_.end()) {
    return Status::ok();
  }
  std::string allowed;
  for (const auto& host : allow_hosts_) {
    allowed += (allowed.empty() ? "" : ", ") + host;
  }
  return invalid(
      field, "host '" + url.host + "' is not in [consumer] callback_allow_hosts (" + allowed + ")");
}

Status CallbackPolicy::check_url(const std::string& url, const char* field) const {
  Status valid = validate_callback_url(url, field);
  if (!valid.is_ok()) {
    return valid;
  }
  CallbackUrl parsed = *parse_callback_url(url, field);
  Status allowed = check_host(parsed, field);
  if (!allowed.is_ok()) {
    return allowed;
  }
  std::vector<IpAddress> addresses = literal_addresses(parsed.host);
  for (const Forbidden& forbidden : forbidden_) {
    bool same = forbidden.port == parsed.port && forbidden.host == parsed.host;
    for (const IpAddress& address : addresses) {
      same = same || matches(forbidden, address, parsed.port);
    }
    if (same) {
      return invalid(field, "'" + redact_url(url) + "' points at " + forbidden.what +
                                "; dq never calls Redis or itself");
    }
  }
  return Status::ok();
}

Status CallbackPolicy::check_address(const IpAddress& address, int port) const {
  std::string target = address.text() + ":" + std::to_string(port);
  if (is_link_local(address)) {
    return Status(Code::kInvalid, target + " is link-local (cloud metadata lives there)");
  }
  for (const Forbidden& forbidden : forbidden_) {
    if (matches(forbidden, address, port)) {
      return Status(Code::kInvalid, target + " is " + forbidden.what);
    }
  }
  return Status::ok();
}

std::string CallbackGuard::url_refusal(const CallbackPolicy& policy, const std::string& url) {
  auto parsed = parse_callback_url(url);
  Status allowed = parsed.is_ok() ? policy.check_host(*parsed) : parsed.status();
  if (allowed.is_ok()) {
    return {};
  }
  return allowed.message().empty() ? "refused" : allowed.message();
}

void CallbackGuard::arm(CURL* easy, const CallbackPolicy& policy, const std::string& url) {
  arm_checked(easy, policy, url_refusal(policy, url));
}

void CallbackGuard::arm_checked(CURL* easy, const CallbackPolicy& policy,
                                const std::string& refusal) {
  policy_ = &policy;
  refused_.clear();
  url_refusal_ = refusal;
  // A pooled connection would skip open_socket: a refused URL makes sure it
  // is called. Both are set either way, as a reused handle keeps options.
  long refused = url_refusal_.empty() ? 0L : 1L;
  curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, refused);
  curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, refused);
  curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, &CallbackGuard::open_socket);
  curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, this);
}

curl_socket_t CallbackGuard::open_socket(void* arg, curlsocktype purpose, curl_sockaddr* address) {
  auto* guard = static_cast<CallbackGuard*>(arg);
  if (purpose == CURLSOCKTYPE_IPCXN) {
    if (!guard->url_refusal_.empty()) {
      guard->refused_ = guard->url_refusal_;
      return CURL_SOCKET_BAD;
    }
    IpAddress ip;
    int port = 0;
    if (!from_sockaddr(&address->addr, &ip, &port)) {
      guard->refused_ = "not an IP address";
      return CURL_SOCKET_BAD;
    }
    Status allowed = guard->policy_->check_address(ip, port);
    if (!allowed.is_ok()) {
      guard->refused_ = "refused to connect: " + allowed.message();
      return CURL_SOCKET_BAD;
    }
  }
  return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

}  // namespace dq

// Callback URL rules: what a topic may make dq call (docs/registry.md).
//   - http:// or https:// only, with a host and a valid port;
//   - never a link-local address (169.254.0.0/16, fe80::/10: the cloud
//     metadata service lives there);
//   - never the host:port of a Redis shard or of one of dq's own listeners
//     (API, legacy protocol, admin page);
//   - with [consumer] callback_allow_hosts set, only the hosts listed.
// The first two need no config (validate_callback_url, used by the registry
// for every topic written); the others need a CallbackPolicy built from the
// config (dqctl topic add/set, and the consumers). A host name may resolve to
// anything, so the consumers check again where it counts: each address
// libcurl is about to connect to (CallbackGuard).
#pragma once

#include <curl/curl.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/status.h"

namespace dq {

struct CallbackUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // lower case, IPv6 without brackets
  int port = 0;        // explicit, or 80 / 443
};

// Syntax only; kInvalid "<field>: ..." naming what is wrong. `field` names
// the setting in messages: the same rules hold for an alert's webhook_url.
Result<CallbackUrl> parse_callback_url(const std::string& url, const char* field = "callback_url");

// parse_callback_url, then no link-local address given literally.
Status validate_callback_url(const std::string& url, const char* field = "callback_url");

// An IPv4 or IPv6 address; IPv4-mapped IPv6 (::ffff:a.b.c.d) is kept as IPv4.
struct IpAddress {
  int family = 0;  // AF_INET or AF_INET6
  uint8_t bytes[16] = {0};

  bool operator==(const IpAddress& other) const;
  std::string text() const;
};

class CallbackPolicy {
 public:
  CallbackPolicy() = default;  // link-local only
  // Redis shards, [server] listen and legacy_listen, [consumer]
  // callback_allow_hosts. Resolves the host names among them once, now.
  static CallbackPolicy from_config(const Config& config);

  // Refuses host:port ("what" names it in messages, e.g. "Redis shard a:6379").
  void forbid(const std::string& host, int port, const std::string& what);
  // Only URLs with one of these hosts (case-insensitive); empty: any host.
  void allow_only(const std::vector<std::string>& hosts);

  // Every rule on the URL as written: kInvalid "<field>: ..." when refused.
  Status check_url(const std::string& url, const char* field = "callback_url") const;
  // The allowlist alone (at delivery, for topics written before it was set).
  Status check_host(const CallbackUrl& url, const char* field = "callback_url") const;
  // The rules on an address about to be connected to (after DNS).
  Status check_address(const IpAddress& address, int port) const;

 private:
  struct Forbidden {
    std::string what;
    std::string host;  // as configured, lower case, no brackets
    int port = 0;
    std::vector<IpAddress> addresses;
    bool wildcard = false;  // 0.0.0.0, ::, * or empty: every address of this machine
  };
  bool this_machine(const IpAddress& address) const;
  bool matches(const Forbidden& forbidden, const IpAddress& address, int port) const;

  std::vector<Forbidden> forbidden_;
  std::vector<std::string> allow_hosts_;
  std::vector<IpAddress> own_addresses_;  // of this machine's interfaces
};

// Arms an easy handle so that every connection libcurl opens for it is
// checked against the policy first; a refused one is never opened, and the
// transfer fails (CURLE_COULDNT_CONNECT) with refused() saying why. Must
// outlive the transfer; arm again for every transfer.
class CallbackGuard {
 public:
  void arm(CURL* easy, const CallbackPolicy& policy, const std::string& url);
  // The policy's verdict on a URL itself: "" when its host may be called,
  // else why not. arm() asks it; a caller that sends to the same URL often
  // can keep it and use arm_checked().
  static std::string url_refusal(const CallbackPolicy& policy, const std::string& url);
  // arm() with url_refusal(policy, url) already known.
  void arm_checked(CURL* easy, const CallbackPolicy& policy, const std::string& refusal);
  const std::string& refused() const { return refused_; }

 private:
  static curl_socket_t open_socket(void* guard, curlsocktype purpose, curl_sockaddr* address);

  const CallbackPolicy* policy_ = nullptr;
  std::string url_refusal_;  // the URL itself is refused (allowlist)
  std::string refused_;
};

}  // namespace dq

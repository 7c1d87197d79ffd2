// AdminClient: dq-admin's API spoken to as its page (or a browser) does: the
// session cookie a successful POST /api/login sets, and the CSRF token it
// answers, sent with every later call.
#pragma once

#include <map>
#include <string>

#include "tests/support/http_client.h"

namespace dq::test {

struct AdminAnswer : HttpResult {
  std::map<std::string, std::string> headers;               // lower-case names; the last of each
  std::string header(const std::string& lower_name) const;  // "" when absent
};

class AdminClient {
 public:
  explicit AdminClient(std::string base) : base_(std::move(base)) {}  // http://host:port

  // One call on a fresh connection (10 s at most), with the session cookie
  // and, unless told not to, the CSRF token; extra_header ("If-Match: "1"")
  // is sent too when given. A POST or PUT always sends its body.
  AdminAnswer call(const std::string& method, const std::string& path, const std::string& body = "",
                   bool with_csrf = true, const std::string& extra_header = "");
  // POST /api/login (with the cookie held, without CSRF); a 200 keeps the
  // session cookie and CSRF token it gives.
  AdminAnswer login(const std::string& user, const std::string& password);

  // Connects from this local address (127.0.0.2: another client for dq,
  // though on the same machine).
  void from_address(const std::string& address) { source_ = address; }
  void forget_csrf() { csrf_.clear(); }
  void set_csrf(const std::string& csrf) { csrf_ = csrf; }
  const std::string& cookie() const { return cookie_; }

 private:
  std::string base_;
  std::string cookie_;
  std::string csrf_;
  std::string source_;
};

}  // namespace dq::test

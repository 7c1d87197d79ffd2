// Credentials kept out of log lines and error messages (docs/security.md,
// "What dq never writes to a log"). Every log line or stored error that
// shows a URL, a request target or a shard address shows it through these.
#pragma once

#include <string>
#include <string_view>

namespace dq {

inline constexpr std::string_view kRedacted = "***";

// True for a query parameter or header name that carries a credential:
// names containing token, secret, pass, pwd, key, auth, sig, session, csrf,
// cred, jwt or cookie (any case), and "code" (an OAuth code).
bool is_credential_name(std::string_view name);

// A URL or a request target ("/path?query") with the password of a
// user:password@ part ("redis://:pw@", "sentinel://master:pw@",
// "http://user:pw@") and the value of every credential query parameter
// replaced by "***". Anything else is kept as it was.
std::string redact_url(std::string_view url);

// "scheme://host:port" of a URL, with "/..." when it has more: for a URL
// whose path may itself be the secret (a chat webhook). No user part.
std::string url_origin(std::string_view url);

// `text` (curl's error, which may quote it) with every copy of `url`
// replaced by its origin.
std::string redact_text(std::string_view text, std::string_view url);

// "host:port:password" (a shard in the config's list) as "host:port:***".
std::string redact_shard_text(std::string_view shard);

}  // namespace dq

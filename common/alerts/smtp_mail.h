// Sends one plain-text mail over SMTP with libcurl: smtp:// (optionally
// upgraded with STARTTLS, required), or smtps:// (TLS from the first byte);
// AUTH when a user is set. The message is RFC 5322 text built here (Date,
// From, To, Subject, Message-ID, UTF-8 body); header values are stripped of
// line breaks so no text can inject a header.
#pragma once

#include <string>
#include <vector>

#include "common/alerts/alert_settings.h"
#include "common/core/status.h"

namespace dq {

struct OutgoingMail {
  std::vector<std::string> to;  // addresses, at least one
  std::string subject;
  std::string text;
};

// Returns the server's last answer (e.g. "250 OK: queued as 42") when the
// mail was accepted; kUnavailable with curl's and the server's words when
// not (connection refused, timeout, 5xx). timeout_ms bounds the whole send.
Result<std::string> send_mail(const AlertSettings& settings, const OutgoingMail& mail,
                              int timeout_ms);

// The RFC 5322 message (headers, blank line, CRLF body) send_mail uploads.
std::string format_mail(const std::string& from, const OutgoingMail& mail, int64_t now_ms);

// "a@x, b@y,a@x" -> {"a@x", "b@y"}: trimmed, empty and repeated ones dropped.
std::vector<std::string> split_addresses(const std::string& text);

}  // namespace dq

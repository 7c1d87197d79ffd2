// Implements the signing flags of client/dqctl/topic_options.h.
#include "client/dqctl/topic_options.h"
#include "common/registry/topic_json.h"

namespace dq::ctl {

std::optional<int64_t> parse_duration_ms(const std::string& text) {
  size_t digits = text.find_first_not_of("0123456789");
  if (digits == 0 || text.empty() || (digits != std::string::npos && digits + 1 != text.size()) ||
      text.size() > 12) {
    return std::nullopt;
  }
  int64_t number = std::stoll(text.substr(0, digits));
  char unit = digits == std::string::npos ? 's' : text[digits];
  int64_t unit_s = unit == 's'   ? 1
                   : unit == 'm' ? 60
                   : unit == 'h' ? 3600
                   : unit == 'd' ? 86400
                                 : 0;
  if (unit_s == 0) {
    return std::nullopt;
  }
  return number * unit_s * 1000;
}

bool SigningFlags::take(const std::string& arg, const std::string& value, std::string* error) {
  if (arg == "--signing-secret") {
    secret = value == "off" ? "" : value;
  } else if (arg == "--signing-ed25519") {
    ed25519 = value == "off" ? "" : value;
  } else if (arg == "--overlap") {
    overlap_ms = parse_duration_ms(value);
    if (!overlap_ms) {
      *error = "--overlap '" + value + "' must be a duration such as 90s, 30m, 24h or 7d";
    }
  } else {
    return false;
  }
  return true;
}

Status SigningFlags::apply(Topic* topic, int64_t now_ms) const {
  int64_t overlap = kDefaultSigningOverlapMs;
  if (overlap_ms) {
    auto checked = signing_overlap_ms(*overlap_ms / 1000);
    if (!checked.is_ok()) {
      return Status(Code::kInvalid, "--overlap: must be at most 30d");
    }
    overlap = *checked;
  }
  Status status;
  if (secret) {
    status = set_topic_signing(topic, "signing_secret", *secret, overlap, now_ms);
  }
  if (status.is_ok() && ed25519) {
    status = set_topic_signing(topic, "signing_public_key", *ed25519, overlap, now_ms);
  }
  return status;
}

}  // namespace dq::ctl

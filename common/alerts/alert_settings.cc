// Implements alert settings: parsing, validation, load and save.
#include "common/alerts/alert_settings.h"

#include "common/alerts/webhook.h"
#include "common/registry/callback_url.h"

namespace dq {
namespace {

bool has_control(const std::string& text) {
  for (unsigned char c : text) {
    if (c < ' ' || c == 0x7f) {
      return true;
    }
  }
  return false;
}

Status invalid(const std::string& key, const std::string& why) {
  return Status(Code::kInvalid, key + ": " + why);
}

std::string field_text(const AlertSettings& settings, const std::string& key) {
  if (key == "smtp_host") {
    return settings.smtp_host;
  }
  if (key == "smtp_port") {
    return std::to_string(settings.smtp_port);
  }
  if (key == "smtp_security") {
    return settings.smtp_security;
  }
  if (key == "smtp_user") {
    return settings.smtp_user;
  }
  if (key == "smtp_password") {
    return settings.smtp_password;
  }
  if (key == "mail_from") {
    return settings.mail_from;
  }
  if (key == "to") {
    return settings.to;
  }
  return settings.webhook_url;
}

}  // namespace

Json AlertSettings::to_json() const {
  Json json = Json::object();
  for (const auto& key : alert_setting_keys()) {
    if (key == "smtp_port") {
      json[key] = smtp_port;
    } else if (key == "smtp_password") {
      json[key] = smtp_password.empty() ? "" : "***";
    } else {
      json[key] = field_text(*this, key);
    }
  }
  return json;
}

const std::vector<std::string>& alert_setting_keys() {
  static const std::vector<std::string> kKeys = {"smtp_host", "smtp_port",     "smtp_security",
                                                 "smtp_user", "smtp_password", "mail_from",
                                                 "to",        "webhook_url"};
  return kKeys;
}

Status apply_alert_setting(AlertSettings* settings, const std::string& key,
                           const std::string& value) {
  if (key != "smtp_password" && has_control(value)) {
    return invalid(key, "contains a control character");
  }
  if (key == "smtp_host") {
    if (value.find_first_of(" /@") != std::string::npos) {
      return invalid(key, "'" + value + "' must be a host name or address, without scheme");
    }
    settings->smtp_host = value;
  } else if (key == "smtp_port") {
    if (value.empty() || value.size() > 5 ||
        value.find_first_not_of("0123456789") != std::string::npos || std::stoi(value) < 1 ||
        std::stoi(value) > 65535) {
      return invalid(key, "'" + value + "' must be a port from 1 to 65535");
    }
    settings->smtp_port = std::stoi(value);
  } else if (key == "smtp_security") {
    if (value != "none" && value != "starttls" && value != "tls") {
      return invalid(key, "'" + value + "' must be none, starttls or tls");
    }
    settings->smtp_security = value;
  } else if (key == "smtp_user") {
    settings->smtp_user = value;
  } else if (key == "smtp_password") {
    if (value.find_first_of("\r\n") != std::string::npos) {
      return invalid(key, "contains a line break");
    }
    settings->smtp_password = value;
  } else if (key == "mail_from") {
    Status status = validate_email_list(key, value);
    if (!status.is_ok()) {
      return status;
    }
    if (value.empty() || value.find(',') != std::string::npos) {
      return invalid(key, "must be one email address");
    }
    settings->mail_from = value;
  } else if (key == "to") {
    Status status = validate_email_list(key, value);
    if (!status.is_ok()) {
      return status;
    }
    settings->to = value;
  } else if (key == "webhook_url") {
    // The syntax only: a stored URL the address rules refuse (written by an
    // older host) must not stop the mail; save_alert_settings refuses it and
    // the sender does not call it.
    if (!value.empty()) {
      auto parsed = parse_callback_url(value, "webhook_url");
      if (!parsed.is_ok()) {
        return parsed.status();
      }
    }
    settings->webhook_url = value;
  } else {
    std::string known;
    for (const auto& name : alert_setting_keys()) {
      known += (known.empty() ? "" : ", ") + name;
    }
    return Status(Code::kInvalid, "unknown alert setting '" + key + "' (known: " + known + ")");
  }
  return Status::ok();
}

Result<AlertSettings> load_alert_settings(Registry& registry) {
  auto stored = registry.alert_settings();
  if (!stored.is_ok()) {
    return stored.status();
  }
  AlertSettings settings;
  for (const auto& key : alert_setting_keys()) {
    auto it = stored->find(key);
    if (it == stored->end()) {
      continue;
    }
    Status applied = apply_alert_setting(&settings, key, it->second);
    if (!applied.is_ok()) {
      return Status(Code::kInvalid, "stored alert setting " + applied.message());
    }
  }
  return settings;
}

Status save_alert_settings(Registry& registry, const Config& config,
                           const AlertSettings& settings) {
  AlertSettings checked;
  for (const auto& key : alert_setting_keys()) {
    Status status = apply_alert_setting(&checked, key, field_text(settings, key));
    if (!status.is_ok()) {
      return status;
    }
  }
  Status reachable = check_webhook_url(webhook_policy(config, registry), settings.webhook_url);
  if (!reachable.is_ok()) {
    return reachable;
  }
  for (const auto& key : alert_setting_keys()) {
    Status status = registry.set_alert_setting(key, field_text(settings, key));
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

}  // namespace dq

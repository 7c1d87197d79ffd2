// Alert settings: where alert mails and webhook calls go. Kept in SQLite
// (the registry's alert_settings table, key = value) so the admin page and
// `dqctl alert set` edit them and the redis checker reads them before every
// send, without a restart. Keys:
//   smtp_host, smtp_port, smtp_security (none | starttls | tls), smtp_user,
//   smtp_password, mail_from, to (comma-separated global recipients),
//   webhook_url (http:// or https://; POSTed a JSON object per alert; the
//   callback URL address rules hold for it: common/alerts/webhook.h)
#pragma once

#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq {

struct AlertSettings {
  std::string smtp_host;  // "": mail off
  int smtp_port = 25;
  std::string smtp_security = "none";  // none: plain SMTP; starttls: required; tls: smtps://
  std::string smtp_user;               // "": no AUTH
  std::string smtp_password;
  std::string mail_from = "dq@localhost";
  std::string to;           // global recipients, comma-separated
  std::string webhook_url;  // "": webhook off

  bool mail_on() const { return !smtp_host.empty(); }
  bool webhook_on() const { return !webhook_url.empty(); }
  // The password shown as "***" (set) or "" (not set).
  Json to_json() const;
};

// The keys above, in display order.
const std::vector<std::string>& alert_setting_keys();

// Sets one field from text; kInvalid for an unknown key or a bad value.
Status apply_alert_setting(AlertSettings* settings, const std::string& key,
                           const std::string& value);

// Reads the settings; keys not stored keep their defaults.
Result<AlertSettings> load_alert_settings(Registry& registry);

// Validates every field, the webhook URL against the callback address rules
// (common/alerts/webhook.h) too, then stores all of them.
Status save_alert_settings(Registry& registry, const Config& config, const AlertSettings& settings);

}  // namespace dq

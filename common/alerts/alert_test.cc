// Implements common/alerts/alert_test.h.
#include "common/alerts/alert_test.h"

#include <unistd.h>

#include "common/alerts/smtp_mail.h"
#include "common/alerts/webhook.h"
#include "common/core/clock.h"

namespace dq {

Result<Json> send_test_alert(const AlertSettings& settings, const Config& config,
                             Registry& registry, const std::string& sender, int timeout_ms,
                             bool* failed) {
  std::vector<std::string> to = split_addresses(settings.to);
  bool mail = settings.mail_on() && !to.empty();
  if (!mail && !settings.webhook_on()) {
    return Status(Code::kInvalid,
                  "nothing to test: set an SMTP host and recipients (to), or a webhook URL");
  }
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  std::string subject = std::string("[dq] test alert from ") + host;
  std::string text = "This is a test of dq's alerts, sent by " + sender + " at " +
                     std::to_string(now_ms()) +
                     " ms.\nShard outages, recoveries, dead letters and crash loops are "
                     "reported the same way.\n";
  Json out = Json::object();
  *failed = false;
  if (mail) {
    auto sent = send_mail(settings, {to, subject, text}, timeout_ms);
    *failed = *failed || !sent.is_ok();
    out["mail"] = sent.is_ok()
                      ? Json{{"ok", true}, {"to", to}, {"answer", *sent}}
                      : Json{{"ok", false}, {"to", to}, {"error", sent.status().message()}};
  } else if (settings.mail_on()) {
    out["mail"] = {{"ok", false}, {"error", "no recipient: set the global recipients (to)"}};
    *failed = true;
  }
  if (settings.webhook_on()) {
    Json payload = {{"kind", "test"}, {"subject", subject}, {"text", subject + "\n" + text}};
    auto posted =
        post_webhook(settings.webhook_url, payload, timeout_ms, webhook_policy(config, registry));
    *failed = *failed || !posted.is_ok();
    out["webhook"] = posted.is_ok() ? Json{{"ok", true},
                                           {"url", settings.webhook_url},
                                           {"status", posted->status},
                                           {"took_ms", posted->took_ms},
                                           {"answer", posted->text()}}
                                    : Json{{"ok", false},
                                           {"url", settings.webhook_url},
                                           {"error", posted.status().message()}};
  }
  return out;
}

}  // namespace dq

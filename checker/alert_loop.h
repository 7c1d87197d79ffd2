// AlertLoop: the checker's sending side. Each turn it
//  1. turns alert_outbox events into alert messages: dead letters of one
//     topic are grouped until [alert] group_window_s has passed since the
//     oldest (one mail per topic per window), crash loops go out at once;
//  2. sends every due message by mail (global recipients plus the topic's
//     alert_emails) and webhook, with the settings read fresh from SQLite.
// A channel that fails is tried again after 1 s, 2 s, 4 s ... up to
// [alert] retry_max_s; the message stays in SQLite until every configured
// channel took it, so no alert is lost while SMTP or the webhook is down.
#pragma once

#include <memory>
#include <string>

#include "common/alerts/alert_messages.h"
#include "common/alerts/alert_outbox.h"
#include "common/alerts/alert_settings.h"
#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/registry/registry.h"

namespace dq {

class AlertLoop {
 public:
  explicit AlertLoop(const Config& config);

  // One turn (compose, then send what is due). Errors are logged; the next
  // turn tries again.
  void turn();

 private:
  bool open();
  void compose(int64_t now);
  void send(int64_t now);
  void send_one(AlertMessage& message, const AlertSettings& settings, int64_t now);

  const Config& config_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<AlertOutbox> outbox_;
  std::unique_ptr<AlertMessages> messages_;
  // Errors met every turn (a corrupt or locked file): once, then with a count.
  RepeatLog open_errors_;
  RepeatLog compose_errors_;
  RepeatLog send_errors_;
};

}  // namespace dq

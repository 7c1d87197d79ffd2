#include "common/alerts/dead_letter_alerts.h"

#include "common/core/clock.h"
#include "common/core/log.h"

namespace dq {

void DeadLetterAlerts::report(const Topic& topic, const std::string& job_id, int attempts,
                              const std::string& error) {
  err_log().warn("{}/{} is dead after {} attempts: {}", topic.name, job_id, attempts, error);
  // Queued even when the topic names no recipients: the checker also sends
  // to the global ones and to the webhook.
  if (!outbox_) {
    auto opened = AlertOutbox::open(sqlite_path_);
    if (!opened.is_ok()) {
      err_log().error("cannot open the alert outbox: {}", opened.status().message());
      return;
    }
    outbox_ = std::move(*opened);
  }
  auto queued = outbox_->queue(dead_letter_mail(topic, job_id, attempts, error, now_ms()));
  if (!queued.is_ok()) {
    err_log().error("cannot queue the alert mail for {}/{}: {}", topic.name, job_id,
                    queued.status().message());
    outbox_.reset();
  }
}

}  // namespace dq

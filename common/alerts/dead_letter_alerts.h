// DeadLetterAlerts: logs a job that went to the dead-letter set and queues
// its alert in the outbox (common/alerts/alert_outbox.h); dq-redis-checker groups
// them per topic and sends them (mail, webhook).
// Used wherever a job can die: the consumer (last attempt failed) and the
// timer (last lease expired). Opens the outbox on first use; one per thread.
#pragma once

#include <memory>
#include <string>

#include "common/alerts/alert_outbox.h"
#include "common/registry/registry.h"

namespace dq {

class DeadLetterAlerts {
 public:
  explicit DeadLetterAlerts(std::string sqlite_path) : sqlite_path_(std::move(sqlite_path)) {}

  void report(const Topic& topic, const std::string& job_id, int attempts,
              const std::string& error);

 private:
  std::string sqlite_path_;
  std::unique_ptr<AlertOutbox> outbox_;
};

}  // namespace dq

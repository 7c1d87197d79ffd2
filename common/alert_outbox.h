// AlertOutbox: alert mails queued in SQLite (sql/002_alert_outbox.sql) until
// a sender delivers them. Queueing never waits on SMTP, so a consumer that
// dead-letters a job only pays for one INSERT.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/registry.h"
#include "common/sqlite_db.h"
#include "common/status.h"

namespace dq {

struct AlertMail {
  int64_t id = 0;  // assigned by queue()
  std::string topic;
  std::string job_id;
  std::string recipients;  // comma-separated
  std::string subject;
  std::string text;
  int64_t created_at_ms = 0;
  std::optional<int64_t> sent_at_ms;
};

// The mail for a job that just went to the dead-letter set.
AlertMail dead_letter_mail(const Topic& topic, const std::string& job_id, int attempts,
                           const std::string& last_error, int64_t now_ms);

class AlertOutbox {
 public:
  // Opens the registry database (migrating it first, as Registry::open does).
  static Result<std::unique_ptr<AlertOutbox>> open(const std::string& sqlite_path);

  Result<int64_t> queue(const AlertMail& mail);  // returns the row id
  // Oldest unsent mails first.
  Result<std::vector<AlertMail>> unsent(size_t limit);
  Status mark_sent(int64_t id, int64_t sent_at_ms);
  // Newest first, sent or not (admin page, tests).
  Result<std::vector<AlertMail>> recent(size_t limit);

 private:
  explicit AlertOutbox(SqliteHandle db) : db_(std::move(db)) {}
  Result<std::vector<AlertMail>> select(const char* sql, size_t limit);
  SqliteHandle db_;
};

}  // namespace dq

// AlertOutbox: alert events queued in SQLite (sql/002_alert_outbox.sql,
// sql/003_alert_messages.sql) until the redis checker turns them into mails
// and webhook calls (it groups dead letters per topic; see
// checker/alert_loop.h). Queueing never waits on SMTP, so a consumer that
// dead-letters a job only pays for one INSERT.
// Kinds: "dead_letter" (topic, job_id, attempts, error) and "crash_loop"
// (job_id holds the child's title; queued by the master).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/registry/registry.h"
#include "common/registry/sqlite_db.h"

namespace dq {

struct AlertMail {
  int64_t id = 0;  // assigned by queue()
  std::string kind = "dead_letter";
  std::string topic;
  std::string job_id;
  std::string recipients;  // comma-separated
  std::string subject;
  std::string text;
  int attempts = 0;   // dead_letter: delivery attempts made
  std::string error;  // dead_letter: the last error
  int64_t created_at_ms = 0;
  std::optional<int64_t> sent_at_ms;  // when the checker took it into an alert
};

// The mail for a job that just went to the dead-letter set.
AlertMail dead_letter_mail(const Topic& topic, const std::string& job_id, int attempts,
                           const std::string& last_error, int64_t now_ms);

// The event for a child that keeps dying soon after each start.
AlertMail crash_loop_alert(const std::string& title, const std::string& detail, int64_t now_ms);

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

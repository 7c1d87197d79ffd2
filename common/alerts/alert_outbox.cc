// The alert_outbox table: queue, list unsent, mark sent.
#include "common/alerts/alert_outbox.h"

namespace dq {

AlertMail dead_letter_mail(const Topic& topic, const std::string& job_id, int attempts,
                           const std::string& last_error, int64_t now_ms) {
  AlertMail mail;
  mail.topic = topic.name;
  mail.job_id = job_id;
  mail.recipients = topic.alert_emails;
  mail.subject = "[dq] job " + topic.name + "/" + job_id + " dead after " +
                 std::to_string(attempts) + " attempts";
  mail.text = "Topic: " + topic.name + "\nJob id: " + job_id + "\nCallback: " + topic.callback_url +
              "\nAttempts: " + std::to_string(attempts) + "\nLast error: " + last_error +
              "\n\nThe job is kept in the topic's dead letters. Requeue it with\n"
              "  dqctl dead requeue " +
              topic.name + " " + job_id +
              "\nor from the admin page once the callback works again.\n";
  mail.attempts = attempts;
  mail.error = last_error;
  mail.created_at_ms = now_ms;
  return mail;
}

AlertMail crash_loop_alert(const std::string& title, const std::string& detail, int64_t now_ms) {
  AlertMail mail;
  mail.kind = "crash_loop";
  mail.job_id = title;
  mail.subject = "[dq] " + title + " is in a crash loop";
  mail.text = title +
              " keeps dying soon after it starts; the master respawns it with a growing "
              "pause.\nLast exit: " +
              detail +
              "\n\nSee err_YYYYMMDD.log in the log dir for why, and `dqctl status` for its "
              "restarts.\n";
  mail.error = detail;
  mail.created_at_ms = now_ms;
  return mail;
}

Result<std::unique_ptr<AlertOutbox>> AlertOutbox::open(const std::string& sqlite_path) {
  auto db = open_registry_sqlite(sqlite_path);
  if (!db.is_ok()) {
    return db.status();
  }
  return std::unique_ptr<AlertOutbox>(new AlertOutbox(std::move(*db)));
}

Result<int64_t> AlertOutbox::queue(const AlertMail& mail) {
  Status status = run_sql(
      db_.get(),
      "INSERT INTO alert_outbox (topic, job_id, recipients, subject, text, created_at_ms, kind, "
      "attempts, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      mail.topic, mail.job_id, mail.recipients, mail.subject, mail.text, mail.created_at_ms,
      mail.kind, int64_t{mail.attempts}, mail.error);
  if (!status.is_ok()) {
    return status;
  }
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<std::vector<AlertMail>> AlertOutbox::select(const char* sql, size_t limit) {
  auto statement = Statement::prepare(db_.get(), sql, static_cast<int64_t>(limit));
  if (!statement.is_ok()) {
    return statement.status();
  }
  return statement->rows([](const Statement& row) {
    AlertMail mail;
    row.read(&mail.id, &mail.topic, &mail.job_id, &mail.recipients, &mail.subject, &mail.text,
             &mail.created_at_ms, &mail.sent_at_ms, &mail.kind, &mail.attempts, &mail.error);
    return mail;
  });
}

Result<std::vector<AlertMail>> AlertOutbox::unsent(size_t limit) {
  return select(
      "SELECT id, topic, job_id, recipients, subject, text, created_at_ms, sent_at_ms, "
      "kind, attempts, error FROM alert_outbox WHERE sent_at_ms IS NULL ORDER BY id LIMIT ?",
      limit);
}

Result<std::vector<AlertMail>> AlertOutbox::recent(size_t limit) {
  return select(
      "SELECT id, topic, job_id, recipients, subject, text, created_at_ms, sent_at_ms, "
      "kind, attempts, error FROM alert_outbox ORDER BY id DESC LIMIT ?",
      limit);
}

Status AlertOutbox::mark_sent(int64_t id, int64_t sent_at_ms) {
  return run_sql(db_.get(), "UPDATE alert_outbox SET sent_at_ms = ? WHERE id = ?", sent_at_ms, id);
}

}  // namespace dq

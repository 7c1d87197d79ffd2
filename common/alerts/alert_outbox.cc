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
  auto statement = Statement::prepare(
      db_.get(),
      "INSERT INTO alert_outbox (topic, job_id, recipients, subject, text, created_at_ms, kind, "
      "attempts, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!statement.is_ok()) {
    return statement.status();
  }
  statement->bind(1, mail.topic)
      .bind(2, mail.job_id)
      .bind(3, mail.recipients)
      .bind(4, mail.subject)
      .bind(5, mail.text)
      .bind(6, mail.created_at_ms)
      .bind(7, mail.kind)
      .bind(8, int64_t{mail.attempts})
      .bind(9, mail.error);
  Status status = statement->run();
  if (!status.is_ok()) {
    return status;
  }
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Result<std::vector<AlertMail>> AlertOutbox::select(const char* sql, size_t limit) {
  auto statement = Statement::prepare(db_.get(), sql);
  if (!statement.is_ok()) {
    return statement.status();
  }
  statement->bind(1, static_cast<int64_t>(limit));
  return statement->rows([](const Statement& row) {
    AlertMail mail;
    mail.id = row.column_int(0);
    mail.topic = row.column_text(1);
    mail.job_id = row.column_text(2);
    mail.recipients = row.column_text(3);
    mail.subject = row.column_text(4);
    mail.text = row.column_text(5);
    mail.created_at_ms = row.column_int(6);
    if (!row.column_text(7).empty()) {
      mail.sent_at_ms = row.column_int(7);
    }
    mail.kind = row.column_text(8);
    mail.attempts = static_cast<int>(row.column_int(9));
    mail.error = row.column_text(10);
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
  auto statement =
      Statement::prepare(db_.get(), "UPDATE alert_outbox SET sent_at_ms = ? WHERE id = ?");
  if (!statement.is_ok()) {
    return statement.status();
  }
  statement->bind(1, sent_at_ms).bind(2, id);
  return statement->run();
}

}  // namespace dq

// The alert_messages table: add (with its events), list due, update, recent.
#include "common/alerts/alert_messages.h"

#include "common/registry/registry.h"

namespace dq {
namespace {

constexpr const char* kColumns =
    "id, kind, subject, text, recipients, payload, mail_state, webhook_state, attempts, "
    "next_attempt_at_ms, last_error, created_at_ms, sent_at_ms";

}  // namespace

Result<std::unique_ptr<AlertMessages>> AlertMessages::open(const std::string& sqlite_path) {
  auto db = open_registry_sqlite(sqlite_path);
  if (!db.is_ok()) {
    return db.status();
  }
  return std::unique_ptr<AlertMessages>(new AlertMessages(std::move(*db)));
}

Result<int64_t> AlertMessages::add(const AlertMessage& message,
                                   const std::vector<int64_t>& event_ids) {
  auto transaction = Transaction::begin(db_.get());
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  Status status = run_sql(
      db_.get(),
      "INSERT INTO alert_messages (kind, subject, text, recipients, payload, mail_state, "
      "webhook_state, next_attempt_at_ms, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      message.kind, message.subject, message.text, message.recipients, message.payload.dump(),
      message.mail_state, message.webhook_state, message.next_attempt_at_ms, message.created_at_ms);
  if (!status.is_ok()) {
    return status;
  }
  int64_t id = sqlite3_last_insert_rowid(db_.get());
  for (int64_t event : event_ids) {
    auto stamp = Statement::prepare(
        db_.get(), "UPDATE alert_outbox SET sent_at_ms = ? WHERE id = ? AND sent_at_ms IS NULL",
        message.created_at_ms, event);
    if (!stamp.is_ok()) {
      return stamp.status();
    }
    status = stamp->run();
    if (!status.is_ok()) {
      return status;
    }
    if (sqlite3_changes(db_.get()) != 1) {  // another checker took it (reload overlap)
      return Status(Code::kConflict, "alert event " + std::to_string(event) + " is already taken");
    }
  }
  status = (*transaction)->commit();
  if (!status.is_ok()) {
    return status;
  }
  return id;
}

Result<std::vector<AlertMessage>> AlertMessages::select(const char* sql, int64_t first,
                                                        int64_t limit) {
  auto statement = Statement::prepare(db_.get(), sql, first, limit);
  if (!statement.is_ok()) {
    return statement.status();
  }
  return statement->rows([](const Statement& row) {
    AlertMessage message;
    std::string payload;
    row.read(&message.id, &message.kind, &message.subject, &message.text, &message.recipients,
             &payload, &message.mail_state, &message.webhook_state, &message.attempts,
             &message.next_attempt_at_ms, &message.last_error, &message.created_at_ms,
             &message.sent_at_ms);
    message.payload = Json::parse(payload, nullptr, false);
    if (message.payload.is_discarded()) {
      message.payload = Json::object();
    }
    return message;
  });
}

Result<std::vector<AlertMessage>> AlertMessages::due(int64_t now_ms, size_t limit) {
  std::string sql = std::string("SELECT ") + kColumns +
                    " FROM alert_messages WHERE sent_at_ms IS NULL AND next_attempt_at_ms <= ? "
                    "ORDER BY id LIMIT ?";
  return select(sql.c_str(), now_ms, static_cast<int64_t>(limit));
}

Result<std::vector<AlertMessage>> AlertMessages::recent(size_t limit) {
  std::string sql = std::string("SELECT ") + kColumns +
                    " FROM alert_messages WHERE id > ? ORDER BY id DESC LIMIT ?";
  return select(sql.c_str(), 0, static_cast<int64_t>(limit));
}

Result<bool> AlertMessages::claim(const AlertMessage& message, int64_t until_ms) {
  Status status = run_sql(
      db_.get(),
      "UPDATE alert_messages SET next_attempt_at_ms = ? WHERE id = ? AND next_attempt_at_ms = ? "
      "AND sent_at_ms IS NULL",
      until_ms, message.id, message.next_attempt_at_ms);
  if (!status.is_ok()) {
    return status;
  }
  return sqlite3_changes(db_.get()) == 1;
}

Status AlertMessages::update(const AlertMessage& message) {
  return run_sql(db_.get(),
                 "UPDATE alert_messages SET mail_state = ?, webhook_state = ?, attempts = ?, "
                 "next_attempt_at_ms = ?, last_error = ?, sent_at_ms = NULLIF(?, -1) WHERE id = ?",
                 message.mail_state, message.webhook_state, message.attempts,
                 message.next_attempt_at_ms, message.last_error,
                 message.sent_at_ms.value_or(int64_t{-1}), message.id);
}

}  // namespace dq

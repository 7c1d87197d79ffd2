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
  auto insert = Statement::prepare(
      db_.get(),
      "INSERT INTO alert_messages (kind, subject, text, recipients, payload, mail_state, "
      "webhook_state, next_attempt_at_ms, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!insert.is_ok()) {
    return insert.status();
  }
  insert->bind(1, message.kind)
      .bind(2, message.subject)
      .bind(3, message.text)
      .bind(4, message.recipients)
      .bind(5, message.payload.dump())
      .bind(6, message.mail_state)
      .bind(7, message.webhook_state)
      .bind(8, message.next_attempt_at_ms)
      .bind(9, message.created_at_ms);
  Status status = insert->run();
  if (!status.is_ok()) {
    return status;
  }
  int64_t id = sqlite3_last_insert_rowid(db_.get());
  for (int64_t event : event_ids) {
    auto stamp = Statement::prepare(
        db_.get(), "UPDATE alert_outbox SET sent_at_ms = ? WHERE id = ? AND sent_at_ms IS NULL");
    if (!stamp.is_ok()) {
      return stamp.status();
    }
    stamp->bind(1, message.created_at_ms).bind(2, event);
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
  auto statement = Statement::prepare(db_.get(), sql);
  if (!statement.is_ok()) {
    return statement.status();
  }
  statement->bind(1, first).bind(2, limit);
  return statement->rows([](const Statement& row) {
    AlertMessage message;
    message.id = row.column_int(0);
    message.kind = row.column_text(1);
    message.subject = row.column_text(2);
    message.text = row.column_text(3);
    message.recipients = row.column_text(4);
    message.payload = Json::parse(row.column_text(5), nullptr, false);
    if (message.payload.is_discarded()) {
      message.payload = Json::object();
    }
    message.mail_state = row.column_text(6);
    message.webhook_state = row.column_text(7);
    message.attempts = static_cast<int>(row.column_int(8));
    message.next_attempt_at_ms = row.column_int(9);
    message.last_error = row.column_text(10);
    message.created_at_ms = row.column_int(11);
    if (!row.column_text(12).empty()) {
      message.sent_at_ms = row.column_int(12);
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
  auto statement = Statement::prepare(
      db_.get(),
      "UPDATE alert_messages SET next_attempt_at_ms = ? WHERE id = ? AND next_attempt_at_ms = ? "
      "AND sent_at_ms IS NULL");
  if (!statement.is_ok()) {
    return statement.status();
  }
  statement->bind(1, until_ms).bind(2, message.id).bind(3, message.next_attempt_at_ms);
  Status status = statement->run();
  if (!status.is_ok()) {
    return status;
  }
  return sqlite3_changes(db_.get()) == 1;
}

Status AlertMessages::update(const AlertMessage& message) {
  auto statement = Statement::prepare(
      db_.get(),
      "UPDATE alert_messages SET mail_state = ?, webhook_state = ?, attempts = ?, "
      "next_attempt_at_ms = ?, last_error = ?, sent_at_ms = NULLIF(?, -1) WHERE id = ?");
  if (!statement.is_ok()) {
    return statement.status();
  }
  statement->bind(1, message.mail_state)
      .bind(2, message.webhook_state)
      .bind(3, int64_t{message.attempts})
      .bind(4, message.next_attempt_at_ms)
      .bind(5, message.last_error);
  statement->bind(6, message.sent_at_ms.value_or(int64_t{-1})).bind(7, message.id);
  return statement->run();
}

}  // namespace dq

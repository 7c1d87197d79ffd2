// AlertMessages: composed alerts waiting to be sent, and what became of each
// (sql/003_alert_messages.sql). The redis checker adds one per shard outage,
// per recovery, per topic's group of dead letters and per crash loop, then
// sends the due ones; a failed channel is tried again later (the caller sets
// next_attempt_at_ms), so an alert is never lost while SMTP is down.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/sqlite_db.h"

namespace dq {

struct AlertMessage {
  int64_t id = 0;    // assigned by add()
  std::string kind;  // shard_down, shard_up, dead_letters, crash_loop
  std::string subject;
  std::string text;
  std::string recipients;  // besides the global ones, comma-separated
  Json payload = Json::object();
  std::string mail_state = "pending";  // pending | sent | off
  std::string webhook_state = "pending";
  int attempts = 0;  // failed send rounds
  int64_t next_attempt_at_ms = 0;
  std::string last_error;
  int64_t created_at_ms = 0;
  std::optional<int64_t> sent_at_ms;  // set once no channel is pending

  bool done() const { return mail_state != "pending" && webhook_state != "pending"; }
};

class AlertMessages {
 public:
  // Opens the registry database (migrating it first, as Registry::open does).
  static Result<std::unique_ptr<AlertMessages>> open(const std::string& sqlite_path);

  // Inserts the message and, in the same transaction, stamps sent_at_ms =
  // message.created_at_ms on the alert_outbox events it was made from, so an
  // event goes into exactly one message even if the checker dies mid-way.
  // kConflict (nothing added) when another process took one of the events.
  Result<int64_t> add(const AlertMessage& message, const std::vector<int64_t>& event_ids = {});
  // Unsent messages whose next attempt is due, oldest first.
  Result<std::vector<AlertMessage>> due(int64_t now_ms, size_t limit);
  // Takes a due message for sending: moves its next attempt to until_ms
  // unless another process changed it first (false then: skip it). Two
  // checkers overlap for a moment during a reload; this keeps them from
  // sending the same alert twice.
  Result<bool> claim(const AlertMessage& message, int64_t until_ms);
  // Stores the channel states, attempts, next attempt, last error, sent_at_ms.
  Status update(const AlertMessage& message);
  // Newest first (dqctl alert show, tests).
  Result<std::vector<AlertMessage>> recent(size_t limit);

 private:
  explicit AlertMessages(SqliteHandle db) : db_(std::move(db)) {}
  Result<std::vector<AlertMessage>> select(const char* sql, int64_t first, int64_t limit);
  SqliteHandle db_;
};

}  // namespace dq

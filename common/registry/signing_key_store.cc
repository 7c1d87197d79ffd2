// Implements common/registry/signing_key_store.h through bound statements only.
#include "common/registry/signing_key_store.h"

#include <map>

#include "common/core/log.h"
#include "common/registry/sqlite_db.h"

namespace dq {

Status validate_topic_signing(const Topic& topic) {
  int current_hmac = 0;
  int current_ed25519 = 0;
  for (const SigningKey& key : topic.signing_keys) {
    if (key.kind != "hmac" && key.kind != "ed25519") {
      return Status(Code::kInvalid, "signing_keys: unknown kind '" + key.kind + "'");
    }
    SigningKey copy = key;
    Status readable = decode_signing_key(&copy);
    if (!readable.is_ok()) {
      return Status(Code::kInvalid, "signing_keys: " + readable.message());
    }
    if (key.retires_at_ms == 0) {
      ++(key.kind == "hmac" ? current_hmac : current_ed25519);
    }
  }
  if (current_hmac > 1 || current_ed25519 > 1) {
    return Status(Code::kInvalid, "signing_keys: more than one current key of a kind");
  }
  if (!topic.signing_keys.empty() && topic.method == "GET") {
    return Status(Code::kInvalid,
                  "method: a GET callback has no body to sign; use POST for a signed topic "
                  "(or remove its signing keys first)");
  }
  return Status::ok();
}

Status attach_signing_keys(sqlite3* db, std::vector<Topic>* topics, int64_t now_ms) {
  auto stmt = Statement::prepare(
      db,
      "SELECT topic, key_id, kind, secret, public_key, created_at_ms, retires_at_ms "
      "FROM topic_signing_keys WHERE retires_at_ms = 0 OR retires_at_ms > ?1 "
      "ORDER BY created_at_ms, rowid");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  stmt->bind(1, now_ms);
  std::map<std::string, Topic*> by_name;
  for (Topic& topic : *topics) {
    topic.signing_keys.clear();
    by_name[topic.name] = &topic;
  }
  for (;;) {
    auto row = stmt->step();
    if (!row.is_ok()) {
      return row.status();
    }
    if (!*row) {
      return Status::ok();
    }
    auto owner = by_name.find(stmt->column_text(0));
    if (owner == by_name.end()) {
      continue;
    }
    SigningKey key;
    key.key_id = stmt->column_text(1);
    key.kind = stmt->column_text(2);
    key.secret = stmt->column_text(3);
    key.public_key = stmt->column_text(4);
    key.created_at_ms = stmt->column_int(5);
    key.retires_at_ms = stmt->column_int(6);
    Status decoded = decode_signing_key(&key);
    if (!decoded.is_ok()) {
      err_log().warn("topic {}: {}", owner->first, decoded.message());
      continue;
    }
    owner->second->signing_keys.push_back(std::move(key));
  }
}

Status delete_signing_keys(sqlite3* db, const std::string& topic) {
  auto stmt = Statement::prepare(db, "DELETE FROM topic_signing_keys WHERE topic = ?1");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  stmt->bind(1, topic);
  return stmt->run();
}

Status store_signing_keys(sqlite3* db, const Topic& topic) {
  Status status = delete_signing_keys(db, topic.name);
  for (const SigningKey& key : topic.signing_keys) {
    if (!status.is_ok()) {
      return status;
    }
    auto stmt = Statement::prepare(
        db,
        "INSERT INTO topic_signing_keys (topic, key_id, kind, secret, public_key, "
        "created_at_ms, retires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!stmt.is_ok()) {
      return stmt.status();
    }
    stmt->bind(1, topic.name)
        .bind(2, key.key_id)
        .bind(3, key.kind)
        .bind(4, key.secret)
        .bind(5, key.public_key)
        .bind(6, key.created_at_ms)
        .bind(7, key.retires_at_ms);
    status = stmt->run();
  }
  return status;
}

}  // namespace dq

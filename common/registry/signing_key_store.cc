// Implements common/registry/signing_key_store.h through bound statements only.
#include "common/registry/signing_key_store.h"

#include "common/core/log.h"
#include "common/registry/sqlite_db.h"
#include "common/registry/topic_attach.h"

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
      "ORDER BY created_at_ms, rowid",
      now_ms);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  for (Topic& topic : *topics) {
    topic.signing_keys.clear();
  }
  return attach_rows_to_topics(*stmt, topics, [](Topic& topic, const Statement& row) {
    SigningKey key;
    std::string name;
    row.read(&name, &key.key_id, &key.kind, &key.secret, &key.public_key, &key.created_at_ms,
             &key.retires_at_ms);
    Status decoded = decode_signing_key(&key);
    if (!decoded.is_ok()) {
      err_log().warn("topic {}: {}", topic.name, decoded.message());
      return;
    }
    topic.signing_keys.push_back(std::move(key));
  });
}

Status delete_signing_keys(sqlite3* db, const std::string& topic) {
  return run_sql(db, "DELETE FROM topic_signing_keys WHERE topic = ?1", topic);
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
        "created_at_ms, retires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        topic.name, key.key_id, key.kind, key.secret, key.public_key, key.created_at_ms,
        key.retires_at_ms);
    if (!stmt.is_ok()) {
      return stmt.status();
    }
    status = stmt->run();
  }
  return status;
}

}  // namespace dq

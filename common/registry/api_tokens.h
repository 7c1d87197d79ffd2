// API tokens of producers, kept in SQLite (sql/006_api_tokens.sql): each has
// a name (the producer), a scope (every topic, or a list of topics) and the
// BLAKE2b hash of its secret. The secret is made with libsodium's randombytes,
// shown once by create() and never stored. dqctl (`dqctl token ...`) writes
// the table; the API server reads it into an ApiTokenSet (server/api_auth.h)
// and checks the Authorization header or the legacy "token" field against it.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/registry/sqlite_db.h"

namespace dq {

// What a token may touch.
struct TokenScope {
  bool all_topics = false;
  std::set<std::string> topics;  // when !all_topics
  // The admin scope: it may also create, change and delete the topics above
  // (PUT, PATCH, DELETE /v1/topics/{topic}); without it a token only uses them.
  bool admin = false;

  bool allows(const std::string& topic) const { return all_topics || topics.count(topic) > 0; }
  std::string text() const;  // "*" or "a,b" (the topics; admin apart)
};

struct ApiToken {
  std::string name;
  TokenScope scope;
  std::string token_hash;  // hex BLAKE2b-256 of the secret
  int64_t created_at_ms = 0;
};

// Names: [A-Za-z0-9_.@-]{1,64}.
Status validate_token_name(const std::string& name);
// "*" or topic names joined by commas ("a,b"); kInvalid says what is wrong.
Result<TokenScope> parse_token_scope(const std::string& text);
// Hex BLAKE2b-256 of a presented token (what the table holds).
std::string api_token_hash(const std::string& token);

class ApiTokens {
 public:
  // Opens the registry database (migrating it) at path.
  static Result<std::unique_ptr<ApiTokens>> open(const std::string& path);

  // Makes a new secret for `name` and returns it (the only time it is seen);
  // kConflict when the name exists.
  Result<std::string> create(const std::string& name, const TokenScope& scope);
  Status remove(const std::string& name);  // kNotFound when absent
  Result<std::vector<ApiToken>> list();    // by name, hashes included
  // SQLite's PRAGMA data_version: changes when another connection wrote the
  // database, so a reader re-reads the table only then (cheap to ask).
  Result<int64_t> data_version();
  // The connection (to ask what became of its file: common/registry/registry_file.h).
  sqlite3* db() { return db_.get(); }

 private:
  explicit ApiTokens(SqliteHandle db) : db_(std::move(db)) {}
  SqliteHandle db_;
};

}  // namespace dq

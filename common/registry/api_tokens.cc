// Implements common/registry/api_tokens.h through bound statements only.
#include "common/registry/api_tokens.h"

#include <sodium.h>

#include "common/core/clock.h"
#include "common/registry/registry.h"
#include "common/store/job.h"

namespace dq {
namespace {

constexpr size_t kSecretBytes = 32;
constexpr const char* kTokenPrefix = "dqt_";  // lets secret scanners recognise a leaked token

std::string new_secret() {
  unsigned char raw[kSecretBytes];
  randombytes_buf(raw, sizeof(raw));
  char text[sodium_base64_ENCODED_LEN(kSecretBytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
  sodium_bin2base64(text, sizeof(text), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  sodium_memzero(raw, sizeof(raw));
  return kTokenPrefix + std::string(text);
}

}  // namespace

std::string TokenScope::text() const {
  if (all_topics) {
    return "*";
  }
  std::string out;
  for (const auto& topic : topics) {
    out += (out.empty() ? "" : ",") + topic;
  }
  return out;
}

Status validate_token_name(const std::string& name) {
  if (name.empty() || name.size() > 64 ||
      name.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@-") !=
          std::string::npos) {
    return Status(Code::kInvalid, "token name: 1-64 of A-Z a-z 0-9 _ . @ -");
  }
  return Status::ok();
}

Result<TokenScope> parse_token_scope(const std::string& text) {
  TokenScope scope;
  if (text == "*") {
    scope.all_topics = true;
    return scope;
  }
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string topic =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!valid_topic(topic)) {
      return Status(Code::kInvalid, "topics: '" + topic +
                                        "' is not a topic name; give \"*\" or names joined "
                                        "by commas (a,b)");
    }
    scope.topics.insert(topic);
    if (comma == std::string::npos) {
      return scope;
    }
    start = comma + 1;
  }
}

std::string api_token_hash(const std::string& token) {
  unsigned char digest[32];
  crypto_generichash(digest, sizeof(digest), reinterpret_cast<const unsigned char*>(token.data()),
                     token.size(), nullptr, 0);
  char hex[sizeof(digest) * 2 + 1];
  sodium_bin2hex(hex, sizeof(hex), digest, sizeof(digest));
  return hex;
}

Result<std::unique_ptr<ApiTokens>> ApiTokens::open(const std::string& path) {
  if (sodium_init() < 0) {
    return Status(Code::kInternal, "libsodium cannot start");
  }
  auto db = open_registry_sqlite(path);
  if (!db.is_ok()) {
    return db.status();
  }
  return std::unique_ptr<ApiTokens>(new ApiTokens(std::move(*db)));
}

Result<std::string> ApiTokens::create(const std::string& name, const TokenScope& scope) {
  Status valid = validate_token_name(name);
  if (!valid.is_ok()) {
    return valid;
  }
  if (!scope.all_topics && scope.topics.empty()) {
    return Status(Code::kInvalid, "topics: give \"*\" or at least one topic");
  }
  std::string secret = new_secret();
  Status status =
      run_sql(db_.get(),
              "INSERT INTO api_tokens (name, token_hash, topics, created_at_ms, admin) "
              "VALUES (?1, ?2, ?3, ?4, ?5)",
              name, api_token_hash(secret), scope.text(), now_ms(), int64_t{scope.admin ? 1 : 0});
  if (status.code() == Code::kConflict) {
    return Status(Code::kConflict, "token '" + name + "' exists already");
  }
  if (!status.is_ok()) {
    return status;
  }
  return secret;
}

Status ApiTokens::remove(const std::string& name) {
  auto stmt = Statement::prepare(db_.get(), "DELETE FROM api_tokens WHERE name = ?1", name);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->run_changing("token '" + name + "' does not exist");
}

Result<int64_t> ApiTokens::data_version() { return pragma_int(db_.get(), "PRAGMA data_version"); }

Result<std::vector<ApiToken>> ApiTokens::list() {
  auto stmt = Statement::prepare(
      db_.get(),
      "SELECT name, token_hash, topics, created_at_ms, admin FROM api_tokens ORDER BY name");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->rows([](const Statement& row) {
    ApiToken token;
    token.name = row.column_text(0);
    token.token_hash = row.column_text(1);
    auto scope = parse_token_scope(row.column_text(2));
    if (scope.is_ok()) {
      token.scope = std::move(*scope);  // a bad row allows nothing
      token.scope.admin = row.column_int(4) != 0;
    }
    token.created_at_ms = row.column_int(3);

    return token;
  });
}

}  // namespace dq

// Implements server/api_auth.h.
#include "server/api_auth.h"

#include <sodium.h>
#include <strings.h>

#include <cstring>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/registry/registry_file.h"

namespace dq {
namespace {

uint64_t prefix_of(const unsigned char* hash) {
  uint64_t prefix = 0;
  std::memcpy(&prefix, hash, sizeof(prefix));
  return prefix;
}

}  // namespace

std::string bearer_token(const char* authorization) {
  if (authorization == nullptr) {
    return {};
  }
  std::string value = authorization;
  constexpr size_t kScheme = 7;  // "Bearer "
  if (value.size() <= kScheme || strncasecmp(value.c_str(), "Bearer ", kScheme) != 0) {
    return {};
  }
  size_t start = value.find_first_not_of(' ', kScheme);
  size_t end = value.find_last_not_of(" \t");
  if (start == std::string::npos) {
    return {};
  }
  return value.substr(start, end + 1 - start);
}

ApiAuth::ApiAuth(const Config& config)
    : required_(config.require_token), sqlite_path_(config.sqlite_path) {
  if (required_) {
    reload_if_changed();
  }
}

ApiAuth::~ApiAuth() = default;

void ApiAuth::refresh_if_older(int64_t interval_ms) {
  if (required_ && monotonic_ms() - checked_at_ms_ >= interval_ms) {
    reload_if_changed();
  }
}

void ApiAuth::reload_if_changed() {
  checked_at_ms_ = monotonic_ms();
  // The file deleted or replaced under dq (common/registry/registry_file.h):
  // the last snapshot stays (this process's topic cache logs it and
  // /healthz shows it).
  if (store_ && file_fate(store_->db()) != FileFate::kInPlace) {
    return;
  }
  if (!store_) {
    auto opened = ApiTokens::open(sqlite_path_);
    if (!opened.is_ok()) {
      errors_.note("api tokens: cannot open " + sqlite_path_ + " (the " +
                   std::to_string(tokens_.size()) +
                   " tokens read before still work): " + opened.status().message());
      return;
    }
    store_ = std::move(*opened);
  }
  auto version = store_->data_version();
  if (version.is_ok() && *version == data_version_) {
    errors_.clear();
    return;
  }
  auto listed = store_->list();
  if (!listed.is_ok()) {
    errors_.note("api tokens: cannot read " + sqlite_path_ + " (the " +
                 std::to_string(tokens_.size()) +
                 " tokens read before still work): " + listed.status().message());
    return;
  }
  errors_.clear();
  tokens_.clear();
  by_prefix_.clear();
  for (ApiToken& token : *listed) {
    Loaded loaded{{}, std::move(token)};
    size_t length = 0;
    const std::string& hex = loaded.token.token_hash;
    if (sodium_hex2bin(loaded.hash.data(), loaded.hash.size(), hex.data(), hex.size(), nullptr,
                       &length, nullptr) != 0 ||
        length != loaded.hash.size()) {
      continue;  // not a hash dq wrote: matches nothing
    }
    by_prefix_.emplace(prefix_of(loaded.hash.data()), tokens_.size());
    tokens_.push_back(std::move(loaded));
  }
  data_version_ = version.is_ok() ? *version : -1;
}

const ApiToken* ApiAuth::find(const std::string& token) const {
  // The same BLAKE2b-256 as api_token_hash(), without the hex.
  unsigned char hash[32];
  crypto_generichash(hash, sizeof(hash), reinterpret_cast<const unsigned char*>(token.data()),
                     token.size(), nullptr, 0);
  const ApiToken* found = nullptr;
  auto [first, last] = by_prefix_.equal_range(prefix_of(hash));
  for (auto it = first; it != last; ++it) {
    const Loaded& stored = tokens_[it->second];
    if (sodium_memcmp(stored.hash.data(), hash, sizeof(hash)) == 0) {
      found = &stored.token;
    }
  }
  return found;
}

std::optional<AuthRefusal> ApiAuth::check(const std::string& token, const std::string* topic,
                                          const char* protocol, TokenScope* scope, bool admin) {
  if (!required_) {
    return std::nullopt;
  }
  auto refuse = [&](int status, const char* reason_key, std::string reason) {
    SharedMetrics::instance().add(SharedMetrics::key({"auth", protocol, reason_key}));
    return AuthRefusal{status, status == 401 ? "unauthorized" : "forbidden", std::move(reason)};
  };
  if (token.empty()) {
    return refuse(401, "missing",
                  "this server requires an API token ([server] require_token = yes): send "
                  "Authorization: Bearer <token> (legacy port: a \"token\" field)");
  }
  const ApiToken* found = find(token);
  if (found == nullptr) {  // made a moment ago? (one cheap PRAGMA when nothing changed)
    reload_if_changed();
    found = find(token);
  }
  if (found == nullptr) {
    return refuse(401, "unknown", "the API token is not known");
  }
  if (topic != nullptr && !found->scope.allows(*topic)) {
    return refuse(403, "scope", "token '" + found->name + "' may not use topic '" + *topic + "'");
  }
  if (admin && !found->scope.admin) {
    return refuse(403, "admin",
                  "token '" + found->name +
                      "' has no admin scope: creating, changing and deleting topics needs a "
                      "token made with `dqctl token add NAME --topics ... --admin`");
  }
  if (scope != nullptr) {
    *scope = found->scope;
  }
  return std::nullopt;
}

}  // namespace dq

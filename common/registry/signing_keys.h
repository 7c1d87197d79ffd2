// Signing keys of a topic's callbacks, in the Standard Webhooks formats
// (https://www.standardwebhooks.com): an HMAC-SHA256 secret "whsec_<base64>"
// (signature "v1,<base64>") and an Ed25519 key pair whose public half is
// "whpk_<base64>" (signature "v1a,<base64>"). A topic holds at most one
// current key of each kind, plus keys retired by a rotation that are still
// sent until their overlap ends (docs/callbacks.md). The table is
// topic_signing_keys (sql/010_topic_signing.sql), read and written with the
// topic by common/registry/registry.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/core/status.h"

namespace dq {

inline constexpr int64_t kDefaultSigningOverlapMs = int64_t{24} * 3600 * 1000;
inline constexpr int64_t kMaxSigningOverlapMs = int64_t{30} * 24 * 3600 * 1000;

struct SigningKey {
  std::string kind;        // "hmac" or "ed25519"
  std::string key_id;      // "key_<16 hex>", names the key in listings
  std::string secret;      // "whsec_..." (hmac) or "whsk_..." (ed25519, 64-byte secret key)
  std::string public_key;  // "whpk_..." (ed25519); empty for hmac
  int64_t created_at_ms = 0;
  int64_t retires_at_ms = 0;  // 0: current; else sent until this time, then dropped
  std::string raw;            // the secret's bytes, decoded once at load (not stored)

  bool operator==(const SigningKey& other) const {
    return std::tie(kind, key_id, secret, created_at_ms, retires_at_ms) ==
           std::tie(other.kind, other.key_id, other.secret, other.created_at_ms,
                    other.retires_at_ms);
  }
  bool operator!=(const SigningKey& other) const { return !(*this == other); }
};

// Standard base64 (with padding), as the spec's formats use.
std::string base64_encode(std::string_view bytes);
// kInvalid when `text` is not standard base64 (padding optional).
Result<std::string> base64_decode(std::string_view text);

// A "whsec_<base64>" secret's bytes: kInvalid (naming field signing_secret)
// unless it has the prefix and 24 to 64 bytes of standard base64.
Result<std::string> parse_whsec(const std::string& text);

// A new key: an HMAC key from "generate" (32 random bytes) or from a given
// whsec_ secret; an Ed25519 key pair from libsodium. created_at_ms = now_ms.
Result<SigningKey> make_hmac_key(const std::string& secret_or_generate, int64_t now_ms);
SigningKey make_ed25519_key(int64_t now_ms);

// Fills key->raw from key->secret; kInvalid when the stored text is broken.
Status decode_signing_key(SigningKey* key);

// True while `key` is sent: current, or retired less than its overlap ago.
inline bool signing_key_live(const SigningKey& key, int64_t now_ms) {
  return key.retires_at_ms == 0 || now_ms < key.retires_at_ms;
}

// Makes `fresh` the current key of its kind: the current one of that kind
// retires at now_ms + overlap_ms (dropped at once when overlap_ms is 0), and
// keys whose overlap has ended are dropped.
void rotate_signing_key(std::vector<SigningKey>* keys, SigningKey fresh, int64_t now_ms,
                        int64_t overlap_ms);
// Drops every key of `kind` ("hmac" or "ed25519"): the topic stops signing so.
void remove_signing_keys(std::vector<SigningKey>* keys, const std::string& kind);

// The current key of `kind`, or nullptr.
const SigningKey* current_signing_key(const std::vector<SigningKey>& keys, const std::string& kind);

// "whsec_" and the first 4 characters of the secret, then "...": enough to tell
// two secrets apart, never enough to use one. Empty for an empty text.
std::string masked_secret(const std::string& secret);

}  // namespace dq

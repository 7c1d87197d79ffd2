// Implements common/registry/signing_keys.h with libsodium (randomness,
// base64, Ed25519 key pairs).
#include "common/registry/signing_keys.h"

#include <sodium.h>

#include <algorithm>

namespace dq {
namespace {

constexpr const char* kHmacPrefix = "whsec_";
constexpr const char* kEd25519SecretPrefix = "whsk_";
constexpr const char* kEd25519PublicPrefix = "whpk_";
constexpr size_t kGeneratedSecretBytes = 32;
// The spec asks for secrets of 24 to 64 bytes.
constexpr size_t kMinSecretBytes = 24;
constexpr size_t kMaxSecretBytes = 64;

bool starts_with(const std::string& text, const char* prefix) {
  return text.compare(0, std::char_traits<char>::length(prefix), prefix) == 0;
}

std::string new_key_id() {
  unsigned char raw[8];
  randombytes_buf(raw, sizeof(raw));
  char hex[sizeof(raw) * 2 + 1];
  sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
  return std::string("key_") + hex;
}

void init_sodium() {
  static const bool ready = sodium_init() >= 0;
  (void)ready;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string text(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(text.data(), text.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  text.resize(text.size() - 1);  // the terminating NUL
  return text;
}

Result<std::string> base64_decode(std::string_view text) {
  // Padding is optional; when present it must complete the last group of 4.
  std::string_view digits = text;
  size_t padding = 0;
  while (padding < 2 && !digits.empty() && digits.back() == '=') {
    digits.remove_suffix(1);
    ++padding;
  }
  Status bad(Code::kInvalid, "not standard base64");
  if (padding > 0 && text.size() % 4 != 0) {
    return bad;
  }
  std::string bytes(digits.size() / 4 * 3 + 3, '\0');
  size_t length = 0;
  const char* end = nullptr;
  int rc = sodium_base642bin(reinterpret_cast<unsigned char*>(bytes.data()), bytes.size(),
                             digits.data(), digits.size(), nullptr, &length, &end,
                             sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
  if (rc != 0 || end != digits.data() + digits.size()) {
    return bad;
  }
  bytes.resize(length);
  return bytes;
}

Result<std::string> parse_whsec(const std::string& text) {
  if (!starts_with(text, kHmacPrefix)) {
    return Status(Code::kInvalid,
                  "signing_secret: must be \"generate\" or whsec_ followed by base64 (24 to 64 "
                  "bytes)");
  }
  auto bytes = base64_decode(std::string_view(text).substr(6));
  if (!bytes.is_ok()) {
    return Status(Code::kInvalid, "signing_secret: the part after whsec_ is not standard base64");
  }
  if (bytes->size() < kMinSecretBytes || bytes->size() > kMaxSecretBytes) {
    return Status(Code::kInvalid, "signing_secret: holds " + std::to_string(bytes->size()) +
                                      " bytes; it must hold 24 to 64");
  }
  return bytes;
}

Result<SigningKey> make_hmac_key(const std::string& secret_or_generate, int64_t now_ms) {
  init_sodium();
  SigningKey key;
  key.kind = "hmac";
  key.key_id = new_key_id();
  key.created_at_ms = now_ms;
  if (secret_or_generate == "generate") {
    key.raw.resize(kGeneratedSecretBytes);
    randombytes_buf(key.raw.data(), key.raw.size());
    key.secret = kHmacPrefix + base64_encode(key.raw);
    return key;
  }
  auto bytes = parse_whsec(secret_or_generate);
  if (!bytes.is_ok()) {
    return bytes.status();
  }
  key.raw = std::move(*bytes);
  key.secret = secret_or_generate;
  return key;
}

SigningKey make_ed25519_key(int64_t now_ms) {
  init_sodium();
  unsigned char public_key[crypto_sign_PUBLICKEYBYTES];
  std::string secret(crypto_sign_SECRETKEYBYTES, '\0');
  crypto_sign_keypair(public_key, reinterpret_cast<unsigned char*>(secret.data()));
  SigningKey key;
  key.kind = "ed25519";
  key.key_id = new_key_id();
  key.created_at_ms = now_ms;
  key.secret = kEd25519SecretPrefix + base64_encode(secret);
  key.public_key =
      kEd25519PublicPrefix +
      base64_encode(std::string_view(reinterpret_cast<char*>(public_key), sizeof(public_key)));
  key.raw = std::move(secret);
  return key;
}

Status decode_signing_key(SigningKey* key) {
  if (key->kind == "hmac") {
    auto bytes = parse_whsec(key->secret);
    if (!bytes.is_ok()) {
      return bytes.status();
    }
    key->raw = std::move(*bytes);
    return Status::ok();
  }
  if (key->kind == "ed25519" && starts_with(key->secret, kEd25519SecretPrefix)) {
    auto bytes = base64_decode(std::string_view(key->secret).substr(5));
    if (bytes.is_ok() && bytes->size() == crypto_sign_SECRETKEYBYTES) {
      key->raw = std::move(*bytes);
      return Status::ok();
    }
  }
  return Status(Code::kInvalid,
                "signing key " + key->key_id + " of kind '" + key->kind + "' is not readable");
}

void rotate_signing_key(std::vector<SigningKey>* keys, SigningKey fresh, int64_t now_ms,
                        int64_t overlap_ms) {
  for (SigningKey& key : *keys) {
    if (key.kind == fresh.kind && key.retires_at_ms == 0) {
      key.retires_at_ms = now_ms + overlap_ms;
    }
  }
  keys->erase(
      std::remove_if(keys->begin(), keys->end(),
                     [now_ms](const SigningKey& key) { return !signing_key_live(key, now_ms); }),
      keys->end());
  keys->push_back(std::move(fresh));
}

void remove_signing_keys(std::vector<SigningKey>* keys, const std::string& kind) {
  keys->erase(std::remove_if(keys->begin(), keys->end(),
                             [&kind](const SigningKey& key) { return key.kind == kind; }),
              keys->end());
}

const SigningKey* current_signing_key(const std::vector<SigningKey>& keys,
                                      const std::string& kind) {
  for (const SigningKey& key : keys) {
    if (key.kind == kind && key.retires_at_ms == 0) {
      return &key;
    }
  }
  return nullptr;
}

std::string masked_secret(const std::string& secret) {
  if (secret.empty()) {
    return "";
  }
  size_t underscore = secret.find('_');
  size_t shown = underscore == std::string::npos ? 0 : underscore + 1;
  return secret.substr(0, std::min(secret.size(), shown + 4)) + "...";
}

}  // namespace dq

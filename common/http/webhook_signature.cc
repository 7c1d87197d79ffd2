// Implements common/http/webhook_signature.h with libsodium (HMAC-SHA256,
// Ed25519, BLAKE2b).
#include "common/http/webhook_signature.h"

#include <sodium.h>

#include <charconv>
#include <initializer_list>

namespace dq {
namespace {

std::string decimal(int64_t value) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
  return std::string(digits, end);
}

const unsigned char* bytes_of(std::string_view text) {
  return reinterpret_cast<const unsigned char*>(text.data());
}

std::string hmac_signature(const SigningKey& key, std::string_view message_id,
                           std::string_view timestamp, std::string_view body) {
  crypto_auth_hmacsha256_state state;
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_init(&state, bytes_of(key.raw), key.raw.size());
  crypto_auth_hmacsha256_update(&state, bytes_of(message_id), message_id.size());
  crypto_auth_hmacsha256_update(&state, bytes_of("."), 1);
  crypto_auth_hmacsha256_update(&state, bytes_of(timestamp), timestamp.size());
  crypto_auth_hmacsha256_update(&state, bytes_of("."), 1);
  crypto_auth_hmacsha256_update(&state, bytes_of(body), body.size());
  crypto_auth_hmacsha256_final(&state, mac);
  return "v1," + base64_encode(std::string_view(reinterpret_cast<char*>(mac), sizeof(mac)));
}

std::string ed25519_signature(const SigningKey& key, const std::string& content) {
  unsigned char signature[crypto_sign_BYTES];
  crypto_sign_detached(signature, nullptr, bytes_of(content), content.size(), bytes_of(key.raw));
  return "v1a," +
         base64_encode(std::string_view(reinterpret_cast<char*>(signature), sizeof(signature)));
}

// "msg_" and the hex BLAKE2b-128 of the parts, each followed by a NUL: topics
// and ids hold no NUL, so the fields cannot run together.
std::string message_id_of(std::initializer_list<std::string_view> parts) {
  crypto_generichash_state state;
  unsigned char hash[16];
  crypto_generichash_init(&state, nullptr, 0, sizeof(hash));
  for (std::string_view part : parts) {
    crypto_generichash_update(&state, bytes_of(part), part.size());
    crypto_generichash_update(&state, bytes_of(std::string_view("\0", 1)), 1);
  }
  crypto_generichash_final(&state, hash, sizeof(hash));
  char hex[sizeof(hash) * 2 + 1];
  sodium_bin2hex(hex, sizeof(hex), hash, sizeof(hash));
  return std::string("msg_") + hex;
}

}  // namespace

std::string webhook_message_id(const Job& job) {
  std::string created = decimal(job.created_at_ms);
  return message_id_of({job.topic, job.id, job.incarnation, created});
}

std::string dead_letter_message_id(const std::string& topic, const std::string& id,
                                   const std::string& incarnation, int64_t died_at_ms) {
  std::string died = decimal(died_at_ms);
  return message_id_of({"dead", topic, id, incarnation, died});
}

std::string webhook_signature(const std::vector<SigningKey>& keys, int64_t now_ms,
                              std::string_view message_id, int64_t timestamp_s,
                              std::string_view body) {
  std::string timestamp = decimal(timestamp_s);
  std::string content;  // built only for Ed25519, which signs it in one piece
  std::string out;
  for (const SigningKey& key : keys) {
    if (!signing_key_live(key, now_ms) || key.raw.empty()) {
      continue;
    }
    if (!out.empty()) {
      out.push_back(' ');
    }
    if (key.kind == "hmac") {
      out += hmac_signature(key, message_id, timestamp, body);
    } else if (key.kind == "ed25519" && key.raw.size() == crypto_sign_SECRETKEYBYTES) {
      if (content.empty()) {
        content.reserve(message_id.size() + timestamp.size() + body.size() + 2);
        content.append(message_id).append(".").append(timestamp).append(".").append(body);
      }
      out += ed25519_signature(key, content);
    } else if (!out.empty()) {
      out.pop_back();
    }
  }
  return out;
}

void append_webhook_headers(const Topic& topic, const Job& job, int64_t now_ms,
                            std::string_view body, std::vector<std::string>* headers) {
  if (topic.signing_keys.empty()) {
    return;
  }
  append_webhook_headers(topic, webhook_message_id(job), now_ms, body, headers);
}

void append_webhook_headers(const Topic& topic, const std::string& message_id, int64_t now_ms,
                            std::string_view body, std::vector<std::string>* headers) {
  if (topic.signing_keys.empty()) {
    return;
  }
  static const bool sodium_ready = sodium_init() >= 0;
  (void)sodium_ready;
  int64_t timestamp_s = now_ms / 1000;
  std::string signature =
      webhook_signature(topic.signing_keys, now_ms, message_id, timestamp_s, body);
  if (signature.empty()) {
    return;
  }
  headers->push_back("webhook-id: " + message_id);
  headers->push_back("webhook-timestamp: " + decimal(timestamp_s));
  headers->push_back("webhook-signature: " + signature);
}

}  // namespace dq

// Implements common/registry/topic_json.h.
#include "common/registry/topic_json.h"

namespace dq {
namespace {

// The signing keys without their secrets.
Json signing_keys_json(const Topic& topic) {
  Json keys = Json::array();
  for (const SigningKey& key : topic.signing_keys) {
    Json entry{{"key_id", key.key_id},
               {"kind", key.kind},
               {"created_at_ms", key.created_at_ms},
               {"retires_at_ms", key.retires_at_ms}};
    if (!key.public_key.empty()) {
      entry["public_key"] = key.public_key;
    }
    keys.push_back(std::move(entry));
  }
  return keys;
}

}  // namespace

Json topic_to_json(const Topic& topic) {
  Json json{{"name", topic.name},
            {"mode", topic.mode},
            {"callback_url", topic.callback_url},
            {"method", topic.method},
            {"callback_format", topic.callback_format},
            {"success_json", topic.success_json},
            {"timeout_ms", topic.timeout_ms},
            {"default_delay_s", topic.default_delay_s},
            {"tz", topic.tz},
            {"delivery_window", topic.delivery_window},
            {"max_attempts", topic.max_attempts},
            {"priority", topic.priority},
            {"retry_ms", topic.retry_ms},
            {"alert_emails", topic.alert_emails},
            {"creator", topic.creator},
            {"online", topic.online},
            {"created_at_ms", topic.created_at_ms},
            {"updated_at_ms", topic.updated_at_ms},
            {"max_deferrals", topic.max_deferrals},
            {"dead_on", topic.dead_on},
            {"retry_jitter", topic.retry_jitter},
            {"circuit_breaker", topic.circuit_breaker},
            {"circuit_failures", topic.circuit_failures},
            {"circuit_open_ms", topic.circuit_open_ms},
            {"max_in_flight", topic.max_in_flight},
            {"max_rate", topic.max_rate},
            {"max_burst", topic.max_burst},
            {"dead_callback", topic.dead_callback},
            {"dedup_window_s", topic.dedup_window_s},
            {"max_retry_duration_s", topic.max_retry_duration_s},
            {"ttl", topic.ttl},
            {"keep_done_days", topic.keep_done_days},
            {"late_policy", topic.late_policy},
            {"on_dependency_dead", topic.on_dependency_dead},
            {"version", topic.version}};
  const SigningKey* hmac = current_signing_key(topic.signing_keys, "hmac");
  const SigningKey* ed25519 = current_signing_key(topic.signing_keys, "ed25519");
  json["signing_secret"] = hmac ? masked_secret(hmac->secret) : "";
  json["signing_public_key"] = ed25519 ? ed25519->public_key : "";
  json["signing_keys"] = signing_keys_json(topic);
  return json;
}

Status set_topic_signing(Topic* topic, const std::string& field, const std::string& value,
                         int64_t overlap_ms, int64_t now_ms) {
  bool hmac = field == "signing_secret";
  if (!hmac && field != "signing_public_key") {
    return Status(Code::kInvalid, field + ": no such field");
  }
  const char* kind = hmac ? "hmac" : "ed25519";
  const SigningKey* current = current_signing_key(topic->signing_keys, kind);
  if (current && (hmac ? value == masked_secret(current->secret) || value == current->secret
                       : value == current->public_key)) {
    return Status::ok();  // as shown: unchanged
  }
  if (value.empty()) {
    remove_signing_keys(&topic->signing_keys, kind);
    return Status::ok();
  }
  if (hmac) {
    auto key = make_hmac_key(value, now_ms);
    if (!key.is_ok()) {
      return key.status();
    }
    rotate_signing_key(&topic->signing_keys, std::move(*key), now_ms, overlap_ms);
    return Status::ok();
  }
  if (value != "generate") {
    return Status(Code::kInvalid,
                  "signing_public_key: must be \"generate\" (a new Ed25519 key pair) or \"\" "
                  "(stop Ed25519 signing)");
  }
  rotate_signing_key(&topic->signing_keys, make_ed25519_key(now_ms), now_ms, overlap_ms);
  return Status::ok();
}

Result<int64_t> signing_overlap_ms(int64_t seconds) {
  if (seconds < 0 || seconds > kMaxSigningOverlapMs / 1000) {
    return Status(Code::kInvalid, "signing_overlap_s: " + std::to_string(seconds) +
                                      " must be from 0 to 2592000 (30 days)");
  }
  return seconds * 1000;
}

std::string new_signing_secret(const Topic& before, const Topic& after) {
  const SigningKey* old_key = current_signing_key(before.signing_keys, "hmac");
  const SigningKey* new_key = current_signing_key(after.signing_keys, "hmac");
  if (new_key == nullptr || (old_key && old_key->key_id == new_key->key_id)) {
    return "";
  }
  return new_key->secret;
}

}  // namespace dq

// Standard Webhooks signatures of callbacks (https://www.standardwebhooks.com):
// the webhook-id, webhook-timestamp and webhook-signature headers over the
// signed content "${webhook-id}.${webhook-timestamp}.${body}", with the
// body exactly as sent. Keys: common/registry/signing_keys.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry/registry.h"
#include "common/store/job.h"

namespace dq {

// The webhook-id of one job instance: "msg_" and 32 hex digits of a BLAKE2b
// hash of its topic, id, incarnation and creation time. Every attempt of the
// instance carries the same one; a job re-added under the same id gets
// another. Receivers use it as their idempotency key.
std::string webhook_message_id(const Job& job);

// The webhook-id of one death of a job (its dead-letter callback, sent by
// dq-redis-checker): "msg_" and 32 hex digits of a BLAKE2b hash of "dead",
// the topic, id, incarnation and the time it died. Every send of that one
// callback carries it; the same job dying again after a requeue gets another.
std::string dead_letter_message_id(const std::string& topic, const std::string& id,
                                   const std::string& incarnation, int64_t died_at_ms);

// The webhook-signature value: "v1,<base64 HMAC-SHA256>" per HMAC key and
// "v1a,<base64 Ed25519>" per Ed25519 key live at now_ms (current and still
// overlapping after a rotation), separated by single spaces. Empty when no
// key is live.
std::string webhook_signature(const std::vector<SigningKey>& keys, int64_t now_ms,
                              std::string_view message_id, int64_t timestamp_s,
                              std::string_view body);

// Appends "webhook-id", "webhook-timestamp" (now_ms in whole seconds) and
// "webhook-signature" headers ("Name: value") when the topic has a live key;
// appends nothing otherwise.
void append_webhook_headers(const Topic& topic, const Job& job, int64_t now_ms,
                            std::string_view body, std::vector<std::string>* headers);
// The same for a message named `message_id` (a dead-letter callback).
void append_webhook_headers(const Topic& topic, const std::string& message_id, int64_t now_ms,
                            std::string_view body, std::vector<std::string>* headers);

}  // namespace dq

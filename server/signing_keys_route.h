// GET /v1/signing-keys[?topic=NAME]: the Ed25519 public keys receivers
// verify "v1a" signatures with (docs/callbacks.md). Public keys only, so the
// route asks for no token: receivers are not producers and hold none.
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/registry/topic_cache.h"

namespace dq {

// {"keys": [{"topic", "key_id", "public_key", "created_at_ms",
// "retires_at_ms"}]}: every Ed25519 key still sent (current ones have
// retires_at_ms 0), of one topic when `topic` is not empty.
Json signing_keys_answer(const TopicCache& topics, const std::string& topic, int64_t now_ms);

}  // namespace dq

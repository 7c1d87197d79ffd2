// Implements server/signing_keys_route.h from the server's topic snapshot.
#include "server/signing_keys_route.h"

namespace dq {

Json signing_keys_answer(const TopicCache& topics, const std::string& topic, int64_t now_ms) {
  Json keys = Json::array();
  for (const auto& [name, entry] : topics.all()) {
    if (!topic.empty() && name != topic) {
      continue;
    }
    for (const SigningKey& key : entry.signing_keys) {
      if (key.kind != "ed25519" || !signing_key_live(key, now_ms)) {
        continue;
      }
      keys.push_back(Json{{"topic", name},
                          {"key_id", key.key_id},
                          {"public_key", key.public_key},
                          {"created_at_ms", key.created_at_ms},
                          {"retires_at_ms", key.retires_at_ms}});
    }
  }
  return Json{{"keys", keys}};
}

}  // namespace dq

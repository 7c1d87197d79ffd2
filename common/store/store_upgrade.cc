#include "common/store/store_upgrade.h"

#include <string>

#include "common/store/keys.h"
#include "common/store/lua_scripts.h"

namespace dq {

ScriptCall store_upgrade_call(int limit) {
  return {&kStoreUpgradeScript, {keys::kPrefix + "store_version"}, {std::to_string(limit)}};
}

Result<bool> upgrade_store_step(RedisConnection& shard, int limit) {
  auto reply = shard.run(store_upgrade_call(limit));
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  if (r->type != REDIS_REPLY_INTEGER) {
    return Status(Code::kInternal,
                  "unexpected reply to store_upgrade from Redis shard " + shard.address().name());
  }
  return r->integer == 1;
}

}  // namespace dq

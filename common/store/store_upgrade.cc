#include "common/store/store_upgrade.h"

#include <string>

#include "common/store/keys.h"
#include "common/store/lua_scripts.h"

namespace dq {

ScriptCall store_upgrade_call(int limit) {
  return {&kStoreUpgradeScript, {keys::kPrefix + "store_version"}, {std::to_string(limit)}};
}

namespace {

Result<bool> step_result(const redisReply* r, const std::string& shard) {
  if (r->type != REDIS_REPLY_INTEGER) {
    return Status(Code::kInternal, "unexpected reply to store_upgrade from Redis shard " + shard);
  }
  return r->integer == 1;
}

}  // namespace

Result<bool> upgrade_store_step(RedisConnection& shard, int limit) {
  auto reply = shard.run(store_upgrade_call(limit));
  if (!reply.is_ok()) {
    return reply.status();
  }
  return step_result(reply->get(), shard.address().name());
}

void upgrade_store_step(AsyncShard& shard, int limit, std::function<void(Result<bool>)> done) {
  shard.run(store_upgrade_call(limit), [name = shard.address().name(),
                                        done = std::move(done)](Result<const redisReply*> reply) {
    if (!reply.is_ok()) {
      return done(reply.status());
    }
    done(step_result(*reply, name));
  });
}

}  // namespace dq

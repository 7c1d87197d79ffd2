// Implements common/store/dead_callbacks.h over the scripts
// dead_callback_claim.lua and dead_callback_settle.lua.
#include "common/store/dead_callbacks.h"

#include "common/store/keys.h"
#include "common/store/lua_scripts.h"
#include "common/store/reply_values.h"

namespace dq {
namespace {

int64_t number_of(const std::string& text) {
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return 0;
  }
}

DeadCallbackEntry entry_of(const std::string& number, const redisReply* fields) {
  DeadCallbackEntry entry;
  entry.number = number;
  for (size_t i = 0; i + 1 < fields->elements; i += 2) {
    std::string name = reply_string(fields->element[i]);
    const redisReply* value = fields->element[i + 1];
    std::string text(value->str ? value->str : "", value->str ? value->len : 0);
    if (name == "topic") {
      entry.topic = text;
    } else if (name == "id") {
      entry.id = text;
    } else if (name == "body") {
      entry.body = text;
    } else if (name == "attempts") {
      entry.attempts = static_cast<int>(number_of(text));
    } else if (name == "error") {
      entry.last_error = text;
    } else if (name == "died_at") {
      entry.died_at_ms = number_of(text);
    } else if (name == "created") {
      entry.created_at_ms = number_of(text);
    } else if (name == "inc") {
      entry.incarnation = text;
    } else if (name == "tries") {
      entry.tries = static_cast<int>(number_of(text));
    }
  }
  return entry;
}

}  // namespace

Result<ClaimedDeadCallbacks> claim_dead_callbacks(RedisConnection& shard, int limit,
                                                  int64_t lease_ms, const std::string& claim) {
  ScriptCall call{&kDeadCallbackClaimScript,
                  {keys::dead_callbacks()},
                  {std::to_string(limit), std::to_string(lease_ms), claim}};
  auto reply = shard.run(call);
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  ClaimedDeadCallbacks claimed;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      !reply_int(r->element[0], &claimed.redis_now_ms) ||
      r->element[1]->type != REDIS_REPLY_ARRAY) {
    return bad_reply("dead_callback_claim");
  }
  const redisReply* list = r->element[1];
  for (size_t i = 0; i + 1 < list->elements; i += 2) {
    if (list->element[i + 1]->type != REDIS_REPLY_ARRAY) {
      return bad_reply("dead_callback_claim");
    }
    claimed.entries.push_back(entry_of(reply_string(list->element[i]), list->element[i + 1]));
  }
  return claimed;
}

Status finish_dead_callback(RedisConnection& shard, const std::string& number) {
  ScriptCall call{&kDeadCallbackSettleScript, {keys::dead_callbacks()}, {number, "done"}};
  auto reply = shard.run(call);
  return reply.is_ok() ? Status::ok() : reply.status();
}

Result<bool> retry_dead_callback(RedisConnection& shard, const std::string& number,
                                 const std::string& claim, int64_t wait_ms,
                                 const std::string& error) {
  ScriptCall call{&kDeadCallbackSettleScript,
                  {keys::dead_callbacks()},
                  {number, "retry", claim, std::to_string(wait_ms), error}};
  auto settled = int_reply(shard.run(call), "dead_callback_settle");
  if (!settled.is_ok()) {
    return settled.status();
  }
  return *settled == 1;
}

Result<int64_t> pending_dead_callbacks(RedisConnection& shard) {
  return int_reply(shard.command({"ZCARD", keys::dead_callbacks()}), "ZCARD");
}

}  // namespace dq

// Implements common/store/dependencies.h over dep_register.lua, dep_claim.lua,
// dep_release.lua, dep_settle.lua and dep_expire.lua.
#include "common/store/dependencies.h"

#include "common/core/clock.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "common/store/lua_scripts.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

// "how\nended ms\nkey\nwhy" (dep_event in the prelude).
bool parse_event(const std::string& text, DepEvent* event) {
  size_t a = text.find('\n');
  size_t b = a == std::string::npos ? a : text.find('\n', a + 1);
  size_t c = b == std::string::npos ? b : text.find('\n', b + 1);
  if (c == std::string::npos || a != 1) {
    return false;
  }
  event->how = text[0];
  try {
    event->ended_at_ms = std::stoll(text.substr(a + 1, b - a - 1));
  } catch (const std::exception&) {
    return false;
  }
  event->key = text.substr(b + 1, c - b - 1);
  event->why = text.substr(c + 1);
  return true;
}

}  // namespace

ScriptCall dep_register_call(const std::string& waiter_key, const std::vector<std::string>& awaited,
                             const std::vector<std::string>& elsewhere) {
  ScriptCall call{
      &kDepRegisterScript, {keys::awaited()}, {waiter_key, std::to_string(awaited.size())}};
  call.args.insert(call.args.end(), awaited.begin(), awaited.end());
  call.args.insert(call.args.end(), elsewhere.begin(), elsewhere.end());
  return call;
}

Result<ClaimedDepEvents> claim_dep_events(RedisConnection& shard, int limit, int64_t lease_ms) {
  ScriptCall call{
      &kDepClaimScript, {keys::dep_outbox()}, {std::to_string(limit), std::to_string(lease_ms)}};
  auto reply = shard.run(call);
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  ClaimedDepEvents claimed;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      !reply_int(r->element[0], &claimed.redis_now_ms) ||
      r->element[1]->type != REDIS_REPLY_ARRAY) {
    return bad_reply("dep_claim");
  }
  const redisReply* list = r->element[1];
  for (size_t i = 0; i < list->elements; ++i) {
    const redisReply* entry = list->element[i];
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 3 ||
        entry->element[2]->type != REDIS_REPLY_ARRAY) {
      return bad_reply("dep_claim");
    }
    DepEvent event;
    event.number = reply_string(entry->element[0]);
    if (!parse_event(reply_string(entry->element[1]), &event)) {
      return bad_reply("dep_claim");
    }
    for (size_t w = 0; w < entry->element[2]->elements; ++w) {
      event.waiters.push_back(reply_string(entry->element[2]->element[w]));
    }
    claimed.events.push_back(std::move(event));
  }
  return claimed;
}

Result<std::string> release_waiter(RedisConnection& shard, const DepEvent& event,
                                   const std::string& waiter, const WaiterPolicy& policy) {
  std::string topic, id;
  if (!split_job_key(waiter, &topic, &id)) {
    return std::string("done");  // not a job key: nothing to release
  }
  ScriptCall call{&kDepReleaseScript,
                  {keys::due_index(), keys::timer_wake(), keys::counts(), today_stats(),
                   keys::errors(), keys::dead(topic)},
                  {waiter, event.key, std::string(1, event.how), event.why,
                   policy.release_on_dead ? "release" : "dead", policy.dead_callback ? "1" : "0",
                   policy.end_memory.empty() ? "0" : policy.end_memory}};
  auto reply = shard.run(call);
  if (!reply.is_ok()) {
    return reply.status();
  }
  if ((*reply)->type != REDIS_REPLY_STRING && (*reply)->type != REDIS_REPLY_STATUS) {
    return bad_reply("dep_release");
  }
  return reply_string(reply->get());
}

Status settle_dep_event(RedisConnection& shard, const DepEvent& event,
                        const std::vector<std::string>& handled, int64_t retry_ms) {
  ScriptCall call{&kDepSettleScript,
                  {keys::dep_outbox()},
                  {event.number, event.key, retry_ms < 0 ? "done" : std::to_string(retry_ms)}};
  call.args.insert(call.args.end(), handled.begin(), handled.end());
  auto reply = shard.run(call);
  return reply.is_ok() ? Status::ok() : reply.status();
}

Result<int64_t> expire_waiting(RedisConnection& shard, int limit, const std::string& default_memory,
                               const std::vector<std::string>& memories) {
  ScriptCall call{&kDepExpireScript,
                  {keys::waiting_expiry(), keys::counts(), today_stats(), keys::errors()},
                  {std::to_string(limit), default_memory}};
  call.args.insert(call.args.end(), memories.begin(), memories.end());
  return int_reply(shard.run(call), "dep_expire");
}

Result<bool> wait_dep_wake(RedisConnection& shard, int timeout_ms) {
  double seconds = timeout_ms / 1000.0;
  auto reply = shard.command({"BLPOP", keys::dep_wake(), std::to_string(seconds)},
                             timeout_ms + shard.command_timeout_ms());
  if (!reply.is_ok()) {
    return reply.status();
  }
  return (*reply)->type == REDIS_REPLY_ARRAY;
}

Result<int64_t> pending_dep_events(RedisConnection& shard) {
  return int_reply(shard.command({"ZCARD", keys::dep_outbox()}), "ZCARD");
}

}  // namespace dq

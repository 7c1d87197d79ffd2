// A pull topic's caps on its coordination shard (see pull_caps.h).
#include "server/pull_caps.h"

#include "common/core/log.h"
#include "common/registry/topic_caps.h"
#include "common/store/coordination_shard.h"
#include "common/store/job.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

void log_failure(const Result<const redisReply*>& reply, const char* what,
                 const std::string& topic) {
  if (!reply.is_ok()) {
    err_log().warn("pull: caps of topic {}: {} failed: {} (a lease counts until its deadline)",
                   topic, what, reply.status().message());
  }
}

}  // namespace

std::string PullCaps::lease(const std::string& shard_name, const std::string& topic,
                            const std::string& id, const std::string& reserve_id) {
  return shard_name + "|" + job_key(topic, id) + "|" + reserve_id;
}

void PullCaps::run(const Topic& topic, std::vector<std::string> args,
                   std::function<void(Result<const redisReply*>)> done) {
  size_t shard = coordination_shard(jobs_.addresses(), topic.name);
  jobs_.connections()[shard]->run(pull_cap_call(topic.name, std::move(args)), std::move(done));
}

void PullCaps::take(const Topic& topic, const std::string& reserve_id, int want, int64_t hold_ms,
                    std::function<void(Result<Room>)> done) {
  int burst = topic.max_rate > 0 ? effective_burst(topic) : 0;
  run(topic,
      {"take", reserve_id, std::to_string(want), std::to_string(topic.max_in_flight),
       std::to_string(topic.max_rate), std::to_string(burst), std::to_string(hold_ms)},
      [done = std::move(done)](Result<const redisReply*> reply) {
        if (!reply.is_ok()) {
          return done(reply.status());
        }
        const redisReply* r = *reply;
        int64_t allowed = 0;
        Room room;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            !reply_int(r->element[0], &allowed) || !reply_int(r->element[1], &room.wait_ms)) {
          return done(Status(Code::kInternal, "unexpected reply to pull_cap take"));
        }
        room.allowed = static_cast<int>(allowed);
        done(room);
      });
}

void PullCaps::settle(const Topic& topic, const std::string& reserve_id, int allowed,
                      int64_t lease_ms, const std::vector<std::string>& leases) {
  std::vector<std::string> args{"settle", reserve_id, std::to_string(allowed),
                                std::to_string(topic.max_rate), std::to_string(lease_ms)};
  args.insert(args.end(), leases.begin(), leases.end());
  std::string name = topic.name;
  run(topic, std::move(args),
      [name](Result<const redisReply*> reply) { log_failure(reply, "settle", name); });
}

void PullCaps::drop(const Topic& topic, const std::vector<std::string>& leases) {
  std::vector<std::string> args{"drop", topic.name};
  args.insert(args.end(), leases.begin(), leases.end());
  std::string name = topic.name;
  run(topic, std::move(args),
      [name](Result<const redisReply*> reply) { log_failure(reply, "drop", name); });
}

void PullCaps::touch(const Topic& topic, const std::string& lease, int64_t lease_ms) {
  std::string name = topic.name;
  run(topic, {"touch", std::to_string(lease_ms), lease},
      [name](Result<const redisReply*> reply) { log_failure(reply, "touch", name); });
}

}  // namespace dq

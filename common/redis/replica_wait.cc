// Implements common/redis/replica_wait.h.
#include "common/redis/replica_wait.h"

namespace dq {

std::vector<std::string> wait_argv(int replicas, int timeout_ms) {
  return {"WAIT", std::to_string(replicas), std::to_string(timeout_ms)};
}

Status read_wait_reply(const redisReply* reply, int wanted, int timeout_ms,
                       const std::string& shard) {
  if (reply->type != REDIS_REPLY_INTEGER) {
    return Status(Code::kInternal, "redis shard " + shard + ": WAIT answered no number");
  }
  if (reply->integer >= wanted) {
    return Status::ok();
  }
  return Status(Code::kTimeout,
                "replication_timeout: the job is stored on the primary of redis shard " + shard +
                    ", but only " + std::to_string(reply->integer) + " of " +
                    std::to_string(wanted) + " replicas confirmed it within " +
                    std::to_string(timeout_ms) +
                    " ms; outcome for durability unknown (a retry is safe)");
}

Status wait_failed(const Status& failure, const std::string& shard) {
  return Status(Code::kUnknown, "the job is stored on the primary of redis shard " + shard +
                                    ", but waiting for its replicas failed (" + failure.message() +
                                    "); outcome for durability unknown");
}

}  // namespace dq

// Implements master/shard_removal.h.
#include "master/shard_removal.h"

#include <charconv>

#include "common/redis/redis_sync.h"
#include "common/store/keys.h"

namespace dq {
namespace {

// Jobs the shard holds, every topic and state: the sum of {dq}:counts.
Result<int64_t> jobs_on(const ShardAddress& shard, const Config& config) {
  RedisConnection connection(shard, config.redis_connect_timeout_ms,
                             config.redis_command_timeout_ms);
  auto reply = connection.command({"HVALS", keys::counts()});
  if (!reply.is_ok()) {
    return reply.status();
  }
  if ((*reply)->type != REDIS_REPLY_ARRAY) {
    return Status(Code::kInternal, "unexpected reply to HVALS " + keys::counts());
  }
  int64_t total = 0;
  for (size_t i = 0; i < (*reply)->elements; ++i) {
    const redisReply* value = (*reply)->element[i];
    int64_t n = 0;
    if (value->type == REDIS_REPLY_STRING) {
      std::from_chars(value->str, value->str + value->len, n);
    }
    total += n > 0 ? n : 0;
  }
  return total;
}

}  // namespace

std::vector<ShardAddress> removed_shards(const std::vector<ShardAddress>& before,
                                         const std::vector<ShardAddress>& next) {
  std::vector<ShardAddress> removed;
  for (const auto& old : before) {
    bool kept = false;
    for (const auto& shard : next) {
      kept = kept || shard.name() == old.name();
    }
    if (!kept) {
      removed.push_back(old);
    }
  }
  return removed;
}

Status check_removed_shards(const std::vector<ShardAddress>& removed, const Config& next) {
  std::string problems;
  for (const auto& shard : removed) {
    auto jobs = jobs_on(shard, next);
    std::string problem;
    if (!jobs.is_ok()) {
      problem = "shard " + shard.name() +
                " is no longer listed and cannot be asked whether it holds jobs (" +
                jobs.status().message() + ")";
    } else if (*jobs > 0) {
      problem = "shard " + shard.name() + " is no longer listed but holds " +
                std::to_string(*jobs) + " job(s)";
    }
    if (!problem.empty()) {
      problems += (problems.empty() ? "" : "; ") + problem;
    }
  }
  if (problems.empty()) {
    return Status::ok();
  }
  return Status(Code::kInvalid,
                problems +
                    ": their jobs would answer 404 and not be delivered while it is not listed; "
                    "keep it in [redis] shards until it holds none");
}

}  // namespace dq

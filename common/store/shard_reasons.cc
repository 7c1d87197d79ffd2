// Implements common/store/shard_reasons.h.
#include "common/store/shard_reasons.h"

#include <string>

namespace dq {

Status no_shard_can_take(const std::vector<std::unique_ptr<AsyncShard>>& shards,
                         ShardHealthView& checker, const Status& refused, const std::string& job) {
  std::string why = refused.is_ok() ? std::string() : refused.message();
  for (const auto& shard : shards) {
    const std::string name = shard->address().name();
    if (why.find(name) != std::string::npos) {
      continue;  // the refusal named it already
    }
    std::string reason;
    if (!shard->up()) {
      reason = "Redis shard " + name + " is down: " + shard->last_error();
    } else if (checker.is_down(name)) {
      const CheckedShard* seen = checker.report().find(name);
      reason = "Redis shard " + name +
               " is down for dq-redis-checker: " + (seen != nullptr ? seen->reason : "");
    }
    if (!reason.empty()) {
      why += (why.empty() ? "" : "; ") + reason;
    }
  }
  return Status(Code::kUnavailable, "no Redis shard can take job " + job + ": " +
                                        (why.empty() ? "every shard is down" : why));
}

}  // namespace dq

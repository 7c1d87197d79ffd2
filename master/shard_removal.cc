// Implements master/shard_removal.h.
#include "master/shard_removal.h"

#include "common/registry/shard_list.h"

namespace dq {

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
    auto jobs = jobs_on_shard(next, shard);
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

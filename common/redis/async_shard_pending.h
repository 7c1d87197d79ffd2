// AsyncShard's record of a command waiting for its reply, shared by the
// files that implement AsyncShard (async_shard.cc, async_shard_cluster.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/redis/async_shard.h"

namespace dq {

struct AsyncShard::Pending {
  AsyncShard* shard;
  ReplyCallback callback;
  std::optional<ScriptCall> script;  // set for FCALL, to call again after a load
  int timeout_ms = 0;                // 0: the command timeout
  // Cluster only: the command as dq wrote it (untagged), to send again after
  // a redirect, and until when it may wait for that.
  std::vector<std::string> argv{};
  int64_t give_up_ms = 0;
  int64_t resend_at_ms = 0;
};

}  // namespace dq

// Implements common/store/replica_confirm.h.
#include "common/store/replica_confirm.h"

#include <memory>
#include <utility>

#include "common/redis/replica_wait.h"

namespace dq {

// The connection's command timeout covers a WAIT that runs its full time
// and the writes queued behind it on the connection.
ReplicaConfirm::ReplicaConfirm(event_base* base, const ShardAddress& address,
                               int connect_timeout_ms, int command_timeout_ms, int replicas,
                               int wait_timeout_ms)
    : connection_(base, address, connect_timeout_ms, command_timeout_ms + wait_timeout_ms),
      replicas_(replicas),
      wait_timeout_ms_(wait_timeout_ms) {}

void ReplicaConfirm::confirm(std::function<void(Status)> done) {
  next_.push_back(std::move(done));
  if (!waiting_) {
    send_wait();
  }
}

void ReplicaConfirm::send_wait() {
  waiting_ = true;
  auto group = std::make_shared<std::vector<std::function<void(Status)>>>(std::move(next_));
  next_.clear();
  connection_.command(
      wait_argv(replicas_, wait_timeout_ms_), [this, group](Result<const redisReply*> reply) {
        const std::string shard = connection_.address().name();
        Status status = reply.is_ok() ? read_wait_reply(*reply, replicas_, wait_timeout_ms_, shard)
                                      : wait_failed(reply.status(), shard);
        waiting_ = false;
        if (!next_.empty()) {
          send_wait();
        }
        for (auto& done : *group) {
          done(status);
        }
      });
}

}  // namespace dq

// AsyncShard for a virtual shard of a Redis Cluster: finding the node that
// owns the shard's slot, moving there, and holding commands through
// redirects (docs/decisions.md, "Redis Cluster: virtual shards, one slot
// each"). The rest of AsyncShard is in async_shard.cc.
#include <memory>
#include <optional>

#include "common/core/clock.h"
#include "common/core/shared_metrics.h"
#include "common/redis/async_shard.h"
#include "common/redis/async_shard_pending.h"
#include "common/redis/cluster_slot.h"

namespace dq {

void AsyncShard::next_candidate() {
  // The seeds, then every node the cluster named, in turn.
  std::vector<std::pair<std::string, int>> all;
  for (const auto& seed : address_.cluster_seeds) {
    all.emplace_back(seed.host, seed.port);
  }
  all.insert(all.end(), known_nodes_.begin(), known_nodes_.end());
  const auto& next = all[next_known_++ % all.size()];
  target_host_ = next.first;
  target_port_ = next.second;
}

void AsyncShard::check_slot_owner() {
  if (!address_.cluster()) {
    mark_up();
    return;
  }
  auto pending = std::make_unique<Pending>(Pending{
      this,
      [this](const Result<const redisReply*>& reply) {
        if (!reply.is_ok() || context_ == nullptr) {
          if (reply.is_ok() || reply.status().code() != Code::kUnknown) {
            move_to("", 0, "CLUSTER SLOTS failed");
          }
          return;
        }
        std::vector<ClusterNode> nodes;
        auto owner = slot_owner(*reply, key_slot(address_.key_tag()), &nodes);
        known_nodes_.clear();
        for (const auto& node : nodes) {
          known_nodes_.emplace_back(node.host.empty() ? target_host_ : node.host, node.port);
        }
        if (!owner) {
          move_to("", 0, "no cluster node serves slot of " + address_.key_tag());
        } else if ((owner->host.empty() || owner->host == target_host_) &&
                   owner->port == target_port_) {
          mark_up();
        } else {
          move_to(owner->host, owner->port, "slot owned by another node");
        }
      },
      std::nullopt});
  send({"CLUSTER", "SLOTS"}, std::move(pending), /*before_up=*/true);
}

// Closes the connection (replies already sent for still arrive) and connects
// to host:port, or to the next candidate when host is empty.
void AsyncShard::move_to(const std::string& host, int port, const std::string& why) {
  if (host.empty()) {
    target_host_.clear();
  } else {
    target_host_ = host;
    target_port_ = port;
  }
  if (context_ != nullptr) {
    up_ = false;
    last_error_ = why;
    redisAsyncDisconnect(context_);
  }
  connect_started_ms_ = 0;  // reconnect at the next tick
}

void AsyncShard::park(std::unique_ptr<Pending> pending, int64_t resend_at_ms) {
  pending->resend_at_ms = resend_at_ms;
  parked_.push_back(std::move(pending));
}

void AsyncShard::resend_parked(bool give_up_only) {
  int64_t now = monotonic_ms();
  std::deque<std::unique_ptr<Pending>> parked;
  parked.swap(parked_);
  for (auto& pending : parked) {
    if (now > pending->give_up_ms) {
      count_redis_command_error(address_.name());
      pending->callback(Status(Code::kUnavailable, "redis shard " + address_.name() +
                                                       ": cluster redirects did not settle"));
    } else if (give_up_only || !up_ || pending->resend_at_ms > now) {
      parked_.push_back(std::move(pending));
    } else {
      std::vector<std::string> argv = pending->argv;
      send(argv, std::move(pending));
    }
  }
}

}  // namespace dq

// Implements the shard identity check (see shard_identity.h).
#include "checker/shard_identity.h"

#include <cstdlib>
#include <random>

#include "common/core/clock.h"
#include "common/store/keys.h"

namespace dq {
namespace {

const std::string& identity_key() {
  static const std::string key = keys::kPrefix + "identity";
  return key;
}

std::string new_identity() {
  std::random_device random;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%08x%08x", random(), random());
  return std::string(hex) + ":" + std::to_string(now_ms());
}

}  // namespace

Result<IdentitySeen> read_identity(RedisConnection& connection, bool write_if_missing) {
  auto replies = connection.command_all({{"GET", identity_key()}, {"HVALS", keys::counts()}});
  for (auto& reply : replies) {
    if (!reply.is_ok()) {
      return reply.status();
    }
  }
  IdentitySeen seen;
  const redisReply* identity = replies[0]->get();
  if (identity->type == REDIS_REPLY_STRING) {
    seen.identity.assign(identity->str, identity->len);
  }
  const redisReply* counts = replies[1]->get();
  if (counts->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < counts->elements; ++i) {
      if (counts->element[i]->type == REDIS_REPLY_STRING) {
        seen.counted_jobs += std::strtoll(counts->element[i]->str, nullptr, 10);
      }
    }
  }
  if (seen.identity.empty() && write_if_missing) {
    std::string fresh = new_identity();
    auto set = connection.command({"SET", identity_key(), fresh, "NX"});
    if (set.is_ok() && (*set)->type == REDIS_REPLY_STATUS) {
      seen.written = fresh;  // nil: another checker wrote one first; read next round
    }
  }
  return seen;
}

std::optional<DataLoss> note_identity(CheckedShard& health, const IdentitySeen& seen,
                                      int64_t now_ms) {
  std::optional<DataLoss> loss;
  if (!health.identity.empty() && seen.identity != health.identity) {
    loss = DataLoss{health.identity, seen.identity, health.counted_jobs};
    if (health.counted_jobs > 0) {
      ++health.data_lost_total;
      health.lost_jobs = health.counted_jobs;
      health.lost_at_ms = now_ms;
    }
  }
  // "" while it cannot be written (a full shard): the round that writes it
  // stores it, so the loss is reported once.
  health.identity = seen.written.empty() ? seen.identity : seen.written;
  health.counted_jobs = seen.counted_jobs;
  return loss;
}

}  // namespace dq

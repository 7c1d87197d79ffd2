// Implements common/store/shard_writable.h.
#include "common/store/shard_writable.h"

#include "common/redis/redis_refusal.h"
#include "common/store/keys.h"

namespace dq {

Result<WriteCheck> check_shard_writable(RedisConnection& connection) {
  const std::string shard = connection.address().name();
  WriteCheck check;
  auto role = connection.command({"ROLE"});
  if (!role.is_ok() && !connection.connected()) {
    return role.status();
  }
  if (role.is_ok() && (*role)->type == REDIS_REPLY_ARRAY && (*role)->elements >= 3 &&
      (*role)->element[0]->type == REDIS_REPLY_STRING &&
      std::string((*role)->element[0]->str, (*role)->element[0]->len) == "slave") {
    const redisReply* host = (*role)->element[1];
    const redisReply* port = (*role)->element[2];
    std::string primary =
        host->type == REDIS_REPLY_STRING ? std::string(host->str, host->len) : "?";
    primary += ":" + (port->type == REDIS_REPLY_INTEGER ? std::to_string(port->integer) : "?");
    check.writable = false;
    check.reason = "Redis shard " + shard + " is a replica of " + primary +
                   " (ROLE): it refuses writes; fix: list the primary in [redis] shards, or "
                   "redis-cli -h " +
                   connection.address().host + " -p " + std::to_string(connection.address().port) +
                   " REPLICAOF NO ONE";
    return check;
  }
  // Never exists, so the write changes nothing, and costs no AOF line.
  auto probe = connection.command({"LPUSHX", keys::kPrefix + "write-probe", "x"});
  if (probe.is_ok()) {
    return check;
  }
  if (!connection.connected()) {
    return probe.status();
  }
  if (probe.status().code() == Code::kUnavailable) {
    check.writable = false;
    check.reason = probe.status().message();
  }
  return check;  // another error reply (a renamed command...): cannot tell, assume writable
}

}  // namespace dq

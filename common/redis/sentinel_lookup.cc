// Implements the blocking lookup of common/redis/sentinel_lookup.h.
#include "common/redis/sentinel_lookup.h"

#include "common/redis/redis_sync.h"

namespace dq {

Result<HostPort> master_addr_from_reply(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_NIL) {
    return Status(Code::kNotFound, "does not know the master name");
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
      reply->element[0]->type != REDIS_REPLY_STRING ||
      reply->element[1]->type != REDIS_REPLY_STRING) {
    return Status(Code::kInternal, "gave an unexpected answer");
  }
  HostPort primary;
  primary.host.assign(reply->element[0]->str, reply->element[0]->len);
  std::string port(reply->element[1]->str, reply->element[1]->len);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    return Status(Code::kInternal, "gave the port '" + port + "'");
  }
  primary.port = std::stoi(port);
  return primary;
}

std::string role_from_reply(const redisReply* reply) {
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0 ||
      reply->element[0]->type != REDIS_REPLY_STRING) {
    return "";
  }
  return std::string(reply->element[0]->str, reply->element[0]->len);
}

namespace {

// What one sentinel names as the primary, checked with ROLE on that node.
Result<HostPort> ask_one(const ShardAddress& shard, const HostPort& sentinel,
                         int connect_timeout_ms, int command_timeout_ms) {
  ShardAddress sentinel_node;
  sentinel_node.host = sentinel.host;
  sentinel_node.port = sentinel.port;
  RedisConnection asked(sentinel_node, connect_timeout_ms, command_timeout_ms);
  auto reply = asked.command({"SENTINEL", "get-master-addr-by-name", shard.sentinel_master});
  if (!reply.is_ok()) {
    return reply.status();
  }
  auto primary = master_addr_from_reply(reply->get());
  if (!primary.is_ok()) {
    return primary.status();
  }
  ShardAddress node;
  node.host = primary->host;
  node.port = primary->port;
  node.password = shard.password;
  RedisConnection named(node, connect_timeout_ms, command_timeout_ms);
  auto role = named.command({"ROLE"});
  if (!role.is_ok()) {
    return Status(Code::kUnavailable, "names " + primary->text() +
                                          ", which does not answer: " + role.status().message());
  }
  std::string seen = role_from_reply(role->get());
  if (seen != "master") {
    return Status(Code::kUnavailable, "names " + primary->text() + ", which is a " +
                                          (seen.empty() ? "node of unknown role" : seen) +
                                          ", not a primary (failover in progress?)");
  }
  return primary;
}

}  // namespace

Result<HostPort> lookup_sentinel_primary(const ShardAddress& shard, int connect_timeout_ms,
                                         int command_timeout_ms) {
  std::string said;
  for (const HostPort& sentinel : shard.sentinels) {
    auto primary = ask_one(shard, sentinel, connect_timeout_ms, command_timeout_ms);
    if (primary.is_ok()) {
      return primary;
    }
    said += (said.empty() ? "" : "; ") +
            ("sentinel " + sentinel.text() + " " + primary.status().message());
  }
  return Status(Code::kUnavailable,
                "Redis shard " + shard.name() + ": no primary found (" + said + ")");
}

}  // namespace dq

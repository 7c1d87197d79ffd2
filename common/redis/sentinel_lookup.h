// Finding the primary of a Sentinel-managed shard (ShardAddress::is_sentinel):
// each sentinel in turn is asked SENTINEL get-master-addr-by-name, and the
// node named is asked ROLE, so a stale sentinel cannot point dq at a replica.
// The blocking form is used by RedisConnection; AsyncShard asks the sentinels
// with SentinelAsk (common/redis/sentinel_ask.h) and checks ROLE itself.
#pragma once

#include <hiredis/hiredis.h>

#include <string>

#include "common/core/shard.h"
#include "common/core/status.h"

namespace dq {

// The primary's address. kUnavailable, with what each sentinel said, when no
// sentinel names a node that answers ROLE as a primary.
Result<HostPort> lookup_sentinel_primary(const ShardAddress& shard, int connect_timeout_ms,
                                         int command_timeout_ms);

// The reply to SENTINEL get-master-addr-by-name: the address, or kNotFound
// when the sentinel does not know the master name (a nil reply).
Result<HostPort> master_addr_from_reply(const redisReply* reply);

// The first element of a ROLE reply ("master", "slave", "sentinel"), or "".
std::string role_from_reply(const redisReply* reply);

}  // namespace dq

// Redis error replies that mean "the shard refused the command in its present
// state, and nothing was written": the shard is full (OOM under noeviction),
// a read-only replica (READONLY), cannot persist (MISCONF), is loading its
// data (LOADING), is busy in a long script (BUSY), is a replica cut off from
// its primary (MASTERDOWN), lacks the replicas min-replicas-to-write asks
// for (NOREPLICAS), or wants AUTH (NOAUTH).
//
// Why "nothing written" holds for dq's scripts (all without flags): Redis 7
// refuses such a script at its first write command with that error, and the
// state cannot change while a script runs; OOM is only checked before the
// script's first write (docs/RELIABILITY.md, "A shard that refuses writes").
//
// Both transports (common/redis/redis_sync.h, common/redis/async_shard.h) turn these
// into kUnavailable with the shard's name and Redis's text, so every caller
// answers 503 and moves on to another shard where the rules allow; any
// other error reply stays kInternal.
#pragma once

#include <string>
#include <string_view>

#include "common/core/status.h"

namespace dq {

// True when `error` (a Redis error reply's text) is one of the refusals above.
bool is_state_refusal(std::string_view error);

// True for the refusals that say the node is not (or not yet) a writable
// primary (READONLY, LOADING, MASTERDOWN): a Sentinel-managed shard then asks
// its sentinels for the primary again.
bool is_role_change_refusal(std::string_view error);

// kUnavailable "Redis shard NAME refused the command: TEXT (nothing was
// written)", for an error that is_state_refusal().
Status refusal_status(const std::string& shard_name, std::string_view error);

}  // namespace dq

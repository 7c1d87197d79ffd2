// Replica confirmation of a write ([redis] wait_replicas): Redis `WAIT N
// timeout` on the connection that made the write answers how many replicas
// hold it (and every earlier write of that connection). Fewer than N in time
// means the write IS on the primary but not confirmed beyond it: kTimeout,
// "replication_timeout: ...", answered 504 (durability unknown, a retry is
// safe). Used by the API server (common/store/replica_confirm.h) and JobStore.
#pragma once

#include <hiredis/hiredis.h>

#include <string>
#include <vector>

#include "common/core/status.h"

namespace dq {

std::vector<std::string> wait_argv(int replicas, int timeout_ms);

// ok when the WAIT reply counts at least `wanted` replicas; kTimeout when
// fewer; kInternal for a reply that is not a number.
Status read_wait_reply(const redisReply* reply, int wanted, int timeout_ms,
                       const std::string& shard);

// A WAIT that failed itself (connection lost, not sent): the write is on the
// primary already, so this is never "nothing written".
Status wait_failed(const Status& failure, const std::string& shard);

}  // namespace dq

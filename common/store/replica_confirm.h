// ReplicaConfirm: with [redis] wait_replicas = N > 0, adds to one shard run
// on this second connection, and each is answered only after a Redis
// `WAIT N wait_timeout_ms` sent on it confirms the replicas hold it
// (common/redis/replica_wait.h). WAIT blocks the connection that sends it, so
// reads and deletes keep their own connection and never wait behind it.
//
// WAITs are shared: a write answered while no WAIT is in flight sends one
// now; writes answered while one is in flight wait for the next, sent when
// it returns. A WAIT sent after a write's reply always covers that write,
// and while a replica is stalled every add waits at most two timeouts,
// however many arrive.
#pragma once

#include <event2/event.h>

#include <functional>
#include <string>
#include <vector>

#include "common/core/shard.h"
#include "common/core/status.h"
#include "common/redis/async_shard.h"

namespace dq {

class ReplicaConfirm {
 public:
  ReplicaConfirm(event_base* base, const ShardAddress& address, int connect_timeout_ms,
                 int command_timeout_ms, int replicas, int wait_timeout_ms);
  // Fails what still waits while the members its callbacks use still exist.
  ~ReplicaConfirm() { connection_.stop(); }
  ReplicaConfirm(const ReplicaConfirm&) = delete;
  ReplicaConfirm& operator=(const ReplicaConfirm&) = delete;

  void start() { connection_.start(); }
  void stop() { connection_.stop(); }
  // Where the writes to confirm are sent.
  AsyncShard& connection() { return connection_; }
  size_t pending() const { return connection_.pending(); }
  bool connecting() const { return connection_.connecting(); }

  // Call from the reply callback of a write sent on connection(). `done`
  // gets ok once the replicas confirmed it, kTimeout (replication_timeout)
  // when fewer did in time, kUnknown when the WAIT itself failed: never
  // "nothing written".
  void confirm(std::function<void(Status)> done);

 private:
  void send_wait();

  AsyncShard connection_;
  int replicas_;
  int wait_timeout_ms_;
  bool waiting_ = false;                           // a WAIT is in flight
  std::vector<std::function<void(Status)>> next_;  // for the next WAIT
};

}  // namespace dq

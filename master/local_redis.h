// LocalRedis: with [redis] start_local = yes, a shard on 127.0.0.1/localhost
// that does not answer PING when the master starts gets a redis-server of
// its own, supervised by the master (respawned when it dies) and stopped when
// the master exits, after the dq children are gone. Data lives in
// <dirname(log dir)>/redis-<port> with appendonly on.
// When the master is killed (kill -9) its redis-server keeps running, so the
// children still draining can record their outcomes; the next master finds
// it answering with that data dir and adopts it (supervised by polling its
// pid, stopped at the end like its own).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/json.h"

namespace dq {

class LocalRedis {
 public:
  LocalRedis() = default;
  ~LocalRedis() { stop_all(5000); }
  LocalRedis(const LocalRedis&) = delete;
  LocalRedis& operator=(const LocalRedis&) = delete;

  // Starts redis-server for each loopback shard that is down and not ours
  // yet, and waits up to 5 s for it to answer. Problems are logged, never
  // fatal: the API answers 503 until Redis is up.
  void ensure_started(const Config& config);

  // A child exited: true when it was one of ours (it is then respawned,
  // after a pause when it keeps dying).
  bool on_exit(pid_t pid, int wait_status);
  void tick();  // respawns whose pause is over

  // SIGTERM (Redis saves and exits), SIGKILL after timeout_ms.
  void stop_all(int timeout_ms);

  void append_status(Json* children) const;

 private:
  struct Instance {
    int port = 0;
    std::string password;
    std::string dir;
    pid_t pid = -1;
    int64_t started_at_ms = 0;
    int64_t started_mono_ms = 0;
    int restarts = 0;
    int quick_deaths = 0;
    int64_t respawn_at_ms = -1;
    bool adopted = false;  // started by a previous master: not our child, no waitpid
  };

  bool launch(Instance* instance);  // fork+exec, wait for PING
  void exited(Instance* instance, const std::string& how);
  std::vector<Instance> instances_;
};

// The first redis-server in $PATH, or "" when it is not installed.
std::string find_redis_server();

}  // namespace dq

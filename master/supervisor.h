// Supervisor: the master's loop. Forks one generation of children from the
// role table, respawns the ones that die (with a growing pause when they keep
// dying), replaces the whole generation on reload (SIGUSR2 or a changed
// config file), forwards SIGHUP, and on SIGTERM/SIGINT drains the children
// and exits. Signals arrive through a SignalPipe; every change of a child is
// written to the status file for `dqctl status`.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "common/core/config.h"
#include "common/core/listen.h"
#include "master/child_table.h"
#include "master/config_watch.h"
#include "master/local_redis.h"
#include "master/pid_file.h"
#include "master/shard_list_watch.h"
#include "master/signal_pipe.h"

namespace dq {

// The master's own title in log lines.
constexpr const char* kMasterTitle = "dq-master";

class Supervisor {
 public:
  Supervisor(Config config, PidFile* pid_file, SignalPipe* signals);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Runs until stopped; returns the process exit code (0 after a stop).
  int run();

 private:
  void spawn_generation();
  void spawn(size_t slot);
  [[noreturn]] void run_child(const Child& child);
  void reap();
  void on_child_exit(pid_t pid, int wait_status);
  // Queues one alert (sent by the redis checker) for a child in a crash loop.
  void queue_crash_loop_alert(const Child& child, int wait_status);
  void handle_signal(int signal_number);
  void reload(const std::string& why);
  Status reopen_sockets(const Config& next, ListenSockets* next_sockets);
  void begin_stop(int signal_number);
  void tick();
  void write_status();

  Config config_;
  PidFile* pid_file_;
  SignalPipe* signals_;
  ListenSockets sockets_;
  ChildTable table_;
  LocalRedis local_redis_;
  ConfigWatch watch_;
  pid_t master_pid_;
  int64_t started_at_ms_;
  int generation_ = 0;
  bool stopping_ = false;
  int64_t stop_deadline_ms_ = -1;
  bool stragglers_killed_ = false;
  int64_t next_watch_ms_ = 0;
  ShardListWatch shard_list_;      // the config file's shards plus the registry's
  int64_t next_log_prune_ms_ = 0;  // [log] keep_days, checked hourly
  // Respawns since the master started, across generations (for /metrics).
  std::map<std::string, int64_t> restarts_by_role_;
};

}  // namespace dq

// Supervisor: the master's loop. Forks one generation of children from the
// role table, respawns the ones that die (with a growing pause when they keep
// dying), replaces the whole generation on reload (SIGUSR2, a changed config
// file once whole and stable, a changed registry shard list:
// supervisor_reload.cc), forwards SIGHUP, and on SIGTERM/SIGINT drains the
// children and exits. Signals arrive through a SignalPipe; every change of a
// child is written to the status file for `dqctl status`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "common/core/config.h"
#include "common/core/listen.h"
#include "master/child_table.h"
#include "master/config_watch.h"
#include "master/local_redis.h"
#include "master/pid_file.h"
#include "master/registry_file_hold.h"
#include "master/shard_list_watch.h"
#include "master/signal_pipe.h"

namespace dq {

// The master's own title in log lines.
constexpr const char* kMasterTitle = "dq-master";

class Supervisor {
 public:
  // After a reload the old generation keeps running this long, so the new
  // one has connected to Redis and is accepting before the old stops.
  static constexpr int64_t kRetireGraceMs = 300;
  // The config file is looked at this often, and a change is taken once the
  // file stayed the same (size, mtime, contents) this long: an editor or a
  // copy still writing it keeps changing it (master/config_watch.h).
  static constexpr int64_t kConfigLookMs = 500;
  static constexpr int64_t kConfigSettleMs = 2000;

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
  // What started a reload. The operator's SIGUSR2 takes the file as it is;
  // a changed file is taken only whole and stable and when it moves neither
  // the registry, a listener nor every shard (master/config_moves.h); a
  // changed registry shard list reloads with the file in use.
  enum class ReloadCause { kSignal, kFileChanged, kShardList };
  void reload_on_signal();
  void reload_changed_file(const ConfigWatch::Change& change);
  void look_at_config_file(int64_t now);
  void apply_reload(ReloadCause cause, const std::string& why, const Config& loaded,
                    const std::string& file_text);
  void reject_reload(const std::string& why, const std::string& reason);
  // Hands out `next` from now on, closing the master's copies of the rest.
  void use_sockets(const ListenSockets& next);
  void begin_stop(int signal_number);
  void tick();
  void write_status();

  Config config_;             // in use: the file's config with the registry's shards
  Config file_config_;        // in use, as the file gave it
  std::string running_text_;  // the file's contents in use
  PidFile* pid_file_;
  SignalPipe* signals_;
  ListenSockets sockets_;
  ChildTable table_;
  LocalRedis local_redis_;
  RegistryFileHold registry_hold_;  // the registry file stays readable if deleted
  ConfigWatch watch_;
  pid_t master_pid_;
  int64_t started_at_ms_;
  int generation_ = 0;
  bool stopping_ = false;
  int64_t stop_deadline_ms_ = -1;
  bool stragglers_killed_ = false;
  int64_t next_watch_ms_ = 0;
  int64_t next_shard_list_ms_ = 0;
  ShardListWatch shard_list_;      // the config file's shards plus the registry's
  int64_t next_log_prune_ms_ = 0;  // [log] keep_days, checked hourly
  // Respawns since the master started, across generations (for /metrics).
  std::map<std::string, int64_t> restarts_by_role_;
};

}  // namespace dq

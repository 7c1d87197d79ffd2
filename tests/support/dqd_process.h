// DqdProcess: runs the real build/dqd for end-to-end tests, with its own
// temp dir, config file, SQLite registry and log dir, on free ports.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/registry/registry.h"

namespace dq::test {

// A DqdOptions::wrapper that runs dqd with its clock `offset` ahead
// ("+10s"): libfaketime preloaded by `env`, which execs dqd in its own pid, so
// stop() signals dqd itself. (The faketime program forks dqd and does not pass
// SIGTERM on: a stopped test left that dqd running.) A sanitizer build is told
// the preload is fine.
std::vector<std::string> clock_ahead_wrapper(const std::string& offset);

struct DqdOptions {
  std::vector<std::string> shards;  // "127.0.0.1:PORT"
  int workers = 1;
  int timers = 0;
  int consumers = 0;
  int consumer_concurrency = 64;
  int64_t backoff_unit_ms = 300;
  int registry_refresh_ms = 200;
  int drain_timeout_ms = 5000;
  bool legacy = true;
  bool admin = false;     // dq-admin on admin_port() (off by default: one child less)
  std::string extra_ini;  // appended verbatim (e.g. "[server]\nmax_body_bytes = 100\n" — sections
                          // may repeat)
  // Runs dqd through this command, which must exec dqd in its own pid, e.g.
  // clock_ahead_wrapper("+10s") for a host whose clock is ahead.
  std::vector<std::string> wrapper;
  // The address the HTTP API listens on (and base_url() names), e.g. the
  // inside end of a veth pair for a dqd run in a network namespace.
  std::string listen_host = "127.0.0.1";
};

class DqdProcess {
 public:
  explicit DqdProcess(DqdOptions options);  // writes the config; does not start
  ~DqdProcess();                            // stops it (SIGTERM, then SIGKILL) and removes the dir
  DqdProcess(const DqdProcess&) = delete;
  DqdProcess& operator=(const DqdProcess&) = delete;

  void start();                      // starts build/dqd; waits up to 10 s for GET /healthz
  int stop(int timeout_ms = 10000);  // SIGTERM; returns the exit status (-1 if it had to be killed)
  void kill9();
  bool running();
  pid_t pid() const { return pid_; }

  int http_port() const { return http_port_; }
  int legacy_port() const { return legacy_port_; }
  int admin_port() const { return admin_port_; }
  std::string admin_url() const;                         // http://127.0.0.1:PORT
  std::string base_url() const;                          // http://LISTEN_HOST:PORT
  std::string jobs_url(const std::string& topic) const;  // .../v1/topics/TOPIC/jobs
  const std::string& dir() const { return dir_; }
  const std::string& config_path() const { return config_path_; }
  std::string sqlite_path() const { return dir_ + "/dq.db"; }
  std::string log_dir() const { return dir_ + "/log"; }
  void rewrite_config(const DqdOptions& options);  // for reload tests

  // Registers a topic straight in the registry (as dqctl would).
  void add_topic(const std::string& name,
                 const std::string& callback_url = "http://127.0.0.1:9/none",
                 int64_t default_delay_s = 0);
  Registry& registry();

 private:
  void write_config(const DqdOptions& options);

  DqdOptions options_;
  std::string dir_;
  std::string config_path_;
  int http_port_ = 0;
  int legacy_port_ = 0;
  int admin_port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<Registry> registry_;
};

// Runs a command (argv[0] is a path), returns exit status; output in *output (stdout+stderr).
int run_command(const std::vector<std::string>& argv, std::string* output);

}  // namespace dq::test

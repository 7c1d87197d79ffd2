// TestRedis: a real redis-server for tests, on a free port in its own temp
// dir, that can be stopped, killed and restarted on the same port and data.
// Also small helpers for ports and temp dirs.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/core/shard.h"
#include "common/redis/redis_sync.h"

namespace dq::test {

int free_port();                                       // a TCP port free on 127.0.0.1 right now
std::string make_temp_dir(const std::string& prefix);  // mkdtemp under /tmp
void remove_dir(const std::string& dir);

// The redis-server program: on PATH, else Debian's.
inline const std::vector<std::string> kRedisServer = {"redis-server", "/usr/bin/redis-server"};

// Waits (at most timeout_ms) until the child *pid (a redis-server or a
// sentinel) answers PING on 127.0.0.1:port. False when it exited first or
// never answered (then it is killed); *pid is -1 then.
bool answers_ping(pid_t* pid, int port, int timeout_ms = 5000);

class TestRedis {
 public:
  // Starts redis-server (--appendonly yes --save "", then extra_args, e.g.
  // {"--replicaof", "127.0.0.1", "<port>"}) and waits until PING answers (at
  // most 5 s); FAILs the test otherwise.
  explicit TestRedis(std::vector<std::string> extra_args = {});
  ~TestRedis();  // SIGKILL, waitpid, remove the dir
  TestRedis(const TestRedis&) = delete;
  TestRedis& operator=(const TestRedis&) = delete;

  int port() const { return port_; }
  std::string address() const;  // "127.0.0.1:<port>"
  ShardAddress shard() const;
  std::string dir() const { return dir_; }

  void stop();   // SIGTERM and wait until it exited (the AOF keeps the data)
  void start();  // again on the same port and dir; waits for PING
  void kill9();
  bool running() const;
  pid_t pid() const { return pid_; }  // to SIGSTOP it in tests of a hung Redis

  // Runs one command on a fresh connection; FAILs on any error.
  ReplyPtr command(const std::vector<std::string>& argv);
  // Every key with its type and contents, sorted: compare two dumps to
  // assert that nothing changed. Leaves out {dq}:identity, which the redis
  // checker writes at its first check.
  std::string dump_all();

 private:
  bool launch();  // fork+exec and wait for PING; false when it did not come up
  void reap(int timeout_ms);

  std::vector<std::string> extra_args_;
  int port_ = 0;
  std::string dir_;
  mutable pid_t pid_ = -1;
};

}  // namespace dq::test

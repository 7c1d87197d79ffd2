// SentinelGroup: a Redis primary, its replicas and three sentinels watching
// it (master name "mymaster"), all real processes on free ports of 127.0.0.1
// with their own temp dirs, tuned for tests: a primary is "down" after
// 1000 ms, failovers time out after 4 s.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/core/shard.h"
#include "tests/support/redis_server.h"

namespace dq::test {

// One redis-server in sentinel mode, killed with the test.
class TestSentinel {
 public:
  // Watches the primary on primary_port as `master_name`; waits for PING.
  TestSentinel(const std::string& master_name, int primary_port);
  ~TestSentinel();  // SIGKILL, waitpid, remove the dir
  TestSentinel(const TestSentinel&) = delete;
  TestSentinel& operator=(const TestSentinel&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // SENTINEL MASTER fields of the watched master ("num-slaves", "flags", ...).
  std::string master_field(const std::string& field);
  // The primary's port as this sentinel names it; 0 when it cannot say.
  int primary_port();
  // SENTINEL FAILOVER: promotes a replica with the primary still running
  // (it is demoted). "" when the sentinel accepted it, else its error.
  std::string failover();

 private:
  bool launch(const std::string& master_name, int primary_port);

  std::string master_name_;
  int port_ = 0;
  std::string dir_;
  pid_t pid_ = -1;
};

class SentinelGroup {
 public:
  static constexpr const char* kMasterName = "mymaster";

  // Starts the primary, `replicas` replicas and 3 sentinels, and waits until
  // the replicas stream from the primary and every sentinel sees the
  // replicas and the other two sentinels (a failover needs them): FAILs after
  // generous deadlines.
  explicit SentinelGroup(int replicas = 1);

  // "sentinel://mymaster@127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3"
  std::string shard_entry(const std::string& master_name = kMasterName) const;
  // The same as ShardAddress (master name, sentinels, no resolved address).
  ShardAddress shard(const std::string& master_name = kMasterName) const;

  TestRedis& primary() { return *nodes_[0]; }
  TestRedis& node(size_t i) { return *nodes_[i]; }  // 0: the first primary, then the replicas
  size_t node_count() const { return nodes_.size(); }
  TestSentinel& sentinel(size_t i) { return *sentinels_[i]; }

  // Waits until a majority of the sentinels names a primary other than
  // `old_port`, and that node answers ROLE "master"; its port, or 0 after
  // timeout_ms.
  int wait_for_new_primary(int old_port, int timeout_ms);
  // The node (index) listening on `port`, or -1.
  int node_on(int port) const;

 private:
  std::vector<std::unique_ptr<TestRedis>> nodes_;
  std::vector<std::unique_ptr<TestSentinel>> sentinels_;
};

}  // namespace dq::test

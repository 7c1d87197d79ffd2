// TestCluster: a real Redis Cluster for tests, three primaries and three
// replicas (redis-server --cluster-enabled yes on free ports, each in its own
// temp dir, joined with redis-cli --cluster create --cluster-replicas 1).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/redis_server.h"

namespace dq::test {

class TestCluster {
 public:
  // Starts six nodes, creates the cluster and waits (at most 60 s) until
  // every node reports cluster_state:ok; FAILs the test otherwise.
  TestCluster();
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  // "cluster://127.0.0.1:P1,127.0.0.1:P2,..." for dq's shard list.
  std::string shard_entry() const;
  std::vector<TestRedis*> nodes();
  // The nodes that are primaries now (ROLE), in node order.
  std::vector<TestRedis*> primaries();
  // Keys on one node (DBSIZE).
  long long dbsize(TestRedis& node);
  // cluster_state:ok on every running node.
  bool state_ok();
  // Every running replica's link to its primary is up (its first sync done).
  bool replicas_synced();

 private:
  std::vector<std::unique_ptr<TestRedis>> nodes_;
};

}  // namespace dq::test

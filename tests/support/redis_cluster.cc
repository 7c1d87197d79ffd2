#include "tests/support/redis_cluster.h"

#include <doctest/doctest.h>

#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"

namespace dq::test {

TestCluster::TestCluster() {
  for (int i = 0; i < 6; ++i) {
    nodes_.push_back(std::make_unique<TestRedis>(std::vector<std::string>{
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
        "2000", "--repl-diskless-sync-delay", "0"}));
  }
  std::vector<std::string> create = {"/usr/bin/redis-cli", "--cluster", "create"};
  for (const auto& node : nodes_) {
    create.push_back(node->address());
  }
  create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
  std::string output;
  int status = run_command(create, &output);
  REQUIRE_MESSAGE(status == 0, output);
  // A replica that never finished its first sync never takes over: wait for
  // every link too.
  REQUIRE_MESSAGE(wait_until(60000, [this] { return state_ok() && replicas_synced(); }),
                  "cluster never became ok");
}

std::string TestCluster::shard_entry() const {
  std::string entry = "cluster://";
  for (size_t i = 0; i < nodes_.size(); ++i) {
    entry += (i ? "," : "") + nodes_[i]->address();
  }
  return entry;
}

std::vector<TestRedis*> TestCluster::nodes() {
  std::vector<TestRedis*> out;
  for (auto& node : nodes_) {
    out.push_back(node.get());
  }
  return out;
}

std::vector<TestRedis*> TestCluster::primaries() {
  std::vector<TestRedis*> out;
  for (auto& node : nodes_) {
    if (!node->running()) {
      continue;
    }
    ReplyPtr role = node->command({"ROLE"});
    if (role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
        std::string(role->element[0]->str, role->element[0]->len) == "master") {
      out.push_back(node.get());
    }
  }
  return out;
}

long long TestCluster::dbsize(TestRedis& node) { return node.command({"DBSIZE"})->integer; }

bool TestCluster::replicas_synced() {
  int synced = 0;
  for (auto& node : nodes_) {
    if (!node->running()) {
      continue;
    }
    RedisConnection connection(node->shard(), 500, 2000);
    auto info = connection.command({"INFO", "replication"});
    if (!info.is_ok() || (*info)->type != REDIS_REPLY_STRING) {
      return false;
    }
    std::string text((*info)->str, (*info)->len);
    if (text.find("role:slave") != std::string::npos) {
      if (text.find("master_link_status:up") == std::string::npos) {
        return false;
      }
      ++synced;
    }
  }
  return synced > 0;
}

bool TestCluster::state_ok() {
  for (auto& node : nodes_) {
    if (!node->running()) {
      continue;
    }
    RedisConnection connection(node->shard(), 500, 2000);
    auto info = connection.command({"CLUSTER", "INFO"});
    if (!info.is_ok() || (*info)->type != REDIS_REPLY_STRING ||
        std::string((*info)->str, (*info)->len).find("cluster_state:ok") == std::string::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace dq::test

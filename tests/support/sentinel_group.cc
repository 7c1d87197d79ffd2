// Implements tests/support/sentinel_group.h: sentinels are redis-server in
// sentinel mode (`redis-server <conf> --sentinel`), started like TestRedis
// (tests/support/child_process.h), output to <dir>/sentinel.log.
#include "tests/support/sentinel_group.h"

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/redis/redis_sync.h"
#include "tests/support/child_process.h"

namespace dq::test {
namespace {

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

template <typename Done>
bool wait_for(int timeout_ms, Done done) {
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    if (done()) {
      return true;
    }
    pause_ms(50);
  }
  return done();
}

std::string text_of(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    return std::string(reply->str, reply->len);
  }
  if (reply->type == REDIS_REPLY_INTEGER) {
    return std::to_string(reply->integer);
  }
  return "";
}

// One command on a fresh short-lived connection; nullptr when it failed.
ReplyPtr ask(int port, const std::vector<std::string>& argv) {
  ShardAddress address;
  address.host = "127.0.0.1";
  address.port = port;
  RedisConnection connection(address, 500, 2000);
  auto reply = connection.command(argv);
  return reply.is_ok() ? std::move(reply.value()) : ReplyPtr();
}

std::string role_of(int port) {
  ReplyPtr reply = ask(port, {"ROLE"});
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) {
    return "";
  }
  return text_of(reply->element[0]);
}

}  // namespace

TestSentinel::TestSentinel(const std::string& master_name, int primary_port)
    : master_name_(master_name) {
  dir_ = make_temp_dir("dq-sentinel");
  for (int tries = 0; tries < 5; ++tries) {
    port_ = free_port();
    if (launch(master_name, primary_port)) {
      return;
    }
  }
  FAIL("redis sentinel did not start; log:\n" << file_text(dir_ + "/sentinel.log"));
}

TestSentinel::~TestSentinel() {
  kill_child(&pid_);
  remove_dir(dir_);
}

bool TestSentinel::launch(const std::string& master_name, int primary_port) {
  std::string conf = dir_ + "/sentinel.conf";
  {
    std::ofstream out(conf);
    out << "port " << port_ << "\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n"
        << "dir " << dir_ << "\n"
        << "sentinel monitor " << master_name << " 127.0.0.1 " << primary_port << " 2\n"
        << "sentinel down-after-milliseconds " << master_name << " 1000\n"
        << "sentinel failover-timeout " << master_name << " 4000\n"
        << "sentinel parallel-syncs " << master_name << " 1\n";
  }
  pid_ = spawn_logged(kRedisServer, {"redis-server", conf, "--sentinel"}, dir_ + "/sentinel.log");
  return answers_ping(&pid_, port_);
}

std::string TestSentinel::master_field(const std::string& field) {
  ReplyPtr reply = ask(port_, {"SENTINEL", "MASTER", master_name_});
  if (!reply || reply->type != REDIS_REPLY_ARRAY) {
    return "";
  }
  for (size_t i = 0; i + 1 < reply->elements; i += 2) {
    if (text_of(reply->element[i]) == field) {
      return text_of(reply->element[i + 1]);
    }
  }
  return "";
}

int TestSentinel::primary_port() {
  ReplyPtr reply = ask(port_, {"SENTINEL", "get-master-addr-by-name", master_name_});
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
    return 0;
  }
  return std::atoi(text_of(reply->element[1]).c_str());
}

std::string TestSentinel::failover() {
  ShardAddress address;
  address.host = "127.0.0.1";
  address.port = port_;
  RedisConnection connection(address, 500, 2000);
  auto reply = connection.command({"SENTINEL", "FAILOVER", master_name_});
  return reply.is_ok() ? "" : reply.status().message();
}

SentinelGroup::SentinelGroup(int replicas) {
  // Full syncs at once, not after Redis's default 5 s diskless-sync delay
  // (a promoted replica syncs the others too).
  const std::vector<std::string> fast_sync = {"--repl-diskless-sync-delay", "0"};
  nodes_.push_back(std::make_unique<TestRedis>(fast_sync));
  std::string primary_port = std::to_string(nodes_[0]->port());
  for (int i = 0; i < replicas; ++i) {
    std::vector<std::string> args = fast_sync;
    args.insert(args.end(), {"--replicaof", "127.0.0.1", primary_port});
    nodes_.push_back(std::make_unique<TestRedis>(args));
  }
  // Streaming: a fresh value written on the primary shows on every replica.
  int written = 0;
  bool synced = wait_for(15000, [&] {
    std::string value = std::to_string(++written);
    nodes_[0]->command({"SET", "synced", value});
    pause_ms(100);
    for (size_t i = 1; i < nodes_.size(); ++i) {
      ReplyPtr seen = ask(nodes_[i]->port(), {"GET", "synced"});
      if (!seen || text_of(seen.get()) != value) {
        return false;
      }
    }
    return true;
  });
  REQUIRE_MESSAGE(synced, "the replicas did not sync with the primary");
  for (int i = 0; i < 3; ++i) {
    sentinels_.push_back(std::make_unique<TestSentinel>(kMasterName, nodes_[0]->port()));
  }
  // Sentinels find the replicas (INFO, every 10 s at first) and each other
  // (hello messages every 2 s) on their own.
  bool known = wait_for(30000, [&] {
    for (auto& sentinel : sentinels_) {
      if (sentinel->master_field("num-slaves") != std::to_string(replicas) ||
          sentinel->master_field("num-other-sentinels") != "2") {
        return false;
      }
    }
    return true;
  });
  REQUIRE_MESSAGE(known, "the sentinels did not find the replicas and each other in 30 s");
}

std::string SentinelGroup::shard_entry(const std::string& master_name) const {
  std::string entry = "sentinel://" + master_name + "@";
  for (size_t i = 0; i < sentinels_.size(); ++i) {
    entry += (i ? "," : "") + sentinels_[i]->address();
  }
  return entry;
}

ShardAddress SentinelGroup::shard(const std::string& master_name) const {
  ShardAddress shard;
  shard.sentinel_master = master_name;
  shard.host.clear();
  shard.port = 0;
  for (const auto& sentinel : sentinels_) {
    shard.sentinels.push_back(HostPort{"127.0.0.1", sentinel->port()});
  }
  return shard;
}

int SentinelGroup::wait_for_new_primary(int old_port, int timeout_ms) {
  int found = 0;
  wait_for(timeout_ms, [&] {
    int agree = 0;
    int named = 0;
    for (auto& sentinel : sentinels_) {
      int port = sentinel->primary_port();
      if (port != 0 && port != old_port) {
        named = port;
        ++agree;
      }
    }
    if (agree >= 2 && role_of(named) == "master") {
      found = named;
      return true;
    }
    return false;
  });
  return found;
}

int SentinelGroup::node_on(int port) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->port() == port) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace dq::test

// TestRedis: starts redis-server with fork+execvp (no shell), output to
// <dir>/redis.log, and makes sure it dies with the test (PR_SET_PDEATHSIG and
// SIGKILL in the destructor).
#include "tests/support/redis_server.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "tests/support/child_process.h"

namespace dq::test {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string reply_text(const redisReply* reply) {
  switch (reply->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      return std::string(reply->str, reply->len);
    case REDIS_REPLY_INTEGER:
      return std::to_string(reply->integer);
    case REDIS_REPLY_NIL:
      return "(nil)";
    default:
      return "(array)";
  }
}

std::vector<std::string> reply_strings(const redisReply* reply) {
  std::vector<std::string> out;
  if (reply->type != REDIS_REPLY_ARRAY) {
    return out;
  }
  for (size_t i = 0; i < reply->elements; ++i) {
    out.push_back(reply_text(reply->element[i]));
  }
  return out;
}

}  // namespace

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  int bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  int named = getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  REQUIRE(bound == 0);
  REQUIRE(named == 0);
  return ntohs(address.sin_port);
}

std::string make_temp_dir(const std::string& prefix) {
  std::string pattern = "/tmp/" + prefix + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  char* made = mkdtemp(buffer.data());
  REQUIRE(made != nullptr);
  return made;
}

void remove_dir(const std::string& dir) {
  if (dir.empty() || dir.rfind("/tmp/", 0) != 0) {
    return;  // never outside /tmp
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

TestRedis::TestRedis(std::vector<std::string> extra_args) : extra_args_(std::move(extra_args)) {
  dir_ = make_temp_dir("dq-redis");
  // The port is free when picked but another process may grab it before
  // Redis binds it, so try a few.
  for (int tries = 0; tries < 5; ++tries) {
    port_ = free_port();
    if (launch()) {
      return;
    }
  }
  std::string log = read_file(dir_ + "/redis.log");
  FAIL("redis-server did not start; log:\n" << log);
}

TestRedis::~TestRedis() {
  kill9();
  remove_dir(dir_);
}

std::string TestRedis::address() const { return "127.0.0.1:" + std::to_string(port_); }

ShardAddress TestRedis::shard() const {
  ShardAddress shard;
  shard.host = "127.0.0.1";
  shard.port = port_;
  return shard;
}

bool answers_ping(pid_t* pid, int port, int timeout_ms) {
  ShardAddress address;
  address.host = "127.0.0.1";
  address.port = port;
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (child_exited(pid)) {
      return false;  // exited: port taken, bad args...
    }
    RedisConnection connection(address, 200, 500);
    auto reply = connection.command({"PING"});
    if (reply.is_ok()) {
      return true;
    }
    sleep_ms(20);
  }
  kill_child(pid);
  return false;
}

bool TestRedis::launch() {
  std::string port = std::to_string(port_);
  std::vector<std::string> args = {
      "redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", dir_, "--appendonly", "yes",
      "--save", "", "--daemonize", "no", "--logfile", "", "--protected-mode", "no",
      // What dq asks of a shard for compact job records (common/redis/shard_safety.h).
      "--hash-max-listpack-entries", "128", "--hash-max-listpack-value", "512",
      "--zset-max-listpack-entries", "256"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  pid_ = spawn_logged(kRedisServer, std::move(args), dir_ + "/redis.log");
  return answers_ping(&pid_, port_);
}

void TestRedis::reap(int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms && !child_exited(&pid_); waited += 10) {
    sleep_ms(10);
  }
}

void TestRedis::stop() {
  if (pid_ <= 0) {
    return;
  }
  kill(pid_, SIGTERM);
  reap(10000);
  if (pid_ > 0) {
    kill9();
    FAIL("redis-server did not stop on SIGTERM within 10 s");
  }
}

void TestRedis::start() {
  REQUIRE_FALSE(running());
  if (!launch()) {
    FAIL("redis-server did not restart on port " << port_ << "; log:\n"
                                                 << read_file(dir_ + "/redis.log"));
  }
}

void TestRedis::kill9() { kill_child(&pid_); }

bool TestRedis::running() const { return !child_exited(&pid_); }

ReplyPtr TestRedis::command(const std::vector<std::string>& argv) {
  // 30 s: a test's setup EVAL of 100,000+ writes took over 5 s under ASan
  // on a loaded CI machine.
  RedisConnection connection(shard(), 1000, 30000);
  auto reply = connection.command(argv);
  if (!reply.is_ok()) {
    FAIL("redis command " << argv[0] << " failed: " << reply.status().message());
  }
  return std::move(reply.value());
}

std::string TestRedis::dump_all() {
  RedisConnection connection(shard(), 1000, 5000);
  auto run = [&](const std::vector<std::string>& argv) {
    auto reply = connection.command(argv);
    if (!reply.is_ok()) {
      FAIL("dump_all: " << argv[0] << " failed: " << reply.status().message());
    }
    return std::move(reply.value());
  };
  std::vector<std::string> names = reply_strings(run({"KEYS", "*"}).get());
  // The redis checker's identity key (checker/shard_identity.h) is written
  // once, whenever its first check runs: not job data.
  names.erase(std::remove(names.begin(), names.end(), "{dq}:identity"), names.end());
  // The shared registry's keys (docs/registry.md) are published by each
  // host's sync in the background, about a topic or a token: not job data.
  names.erase(std::remove_if(names.begin(), names.end(),
                             [](const std::string& name) {
                               return name.rfind("{dq}:registry:", 0) == 0;
                             }),
              names.end());
  std::sort(names.begin(), names.end());
  std::ostringstream out;
  for (const auto& name : names) {
    std::string type = reply_text(run({"TYPE", name}).get());
    out << name << " (" << type << ")\n";
    std::vector<std::string> items;
    bool sort_items = true;
    if (type == "string") {
      items.push_back(reply_text(run({"GET", name}).get()));
    } else if (type == "hash") {
      auto flat = reply_strings(run({"HGETALL", name}).get());
      for (size_t i = 0; i + 1 < flat.size(); i += 2) {
        items.push_back(flat[i] + " = " + flat[i + 1]);
      }
    } else if (type == "list") {
      items = reply_strings(run({"LRANGE", name, "0", "-1"}).get());
      sort_items = false;  // order is content
    } else if (type == "set") {
      items = reply_strings(run({"SMEMBERS", name}).get());
    } else if (type == "zset") {
      auto flat = reply_strings(run({"ZRANGE", name, "0", "-1", "WITHSCORES"}).get());
      for (size_t i = 0; i + 1 < flat.size(); i += 2) {
        items.push_back(flat[i] + " @ " + flat[i + 1]);
      }
    }
    if (sort_items) {
      std::sort(items.begin(), items.end());
    }
    for (const auto& item : items) {
      out << "  " << item << "\n";
    }
  }
  return out.str();
}

}  // namespace dq::test

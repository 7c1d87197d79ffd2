// Shard lists and placement, the ini loader, and the datetime parser: the
// pure parts of common/ that every role relies on.
#include <doctest/doctest.h>

#include <algorithm>
#include <ctime>
#include <fstream>

#include "common/core/clock.h"
#include "common/core/cluster_shards.h"
#include "common/core/config.h"
#include "common/core/shard.h"
#include "common/store/job.h"
#include "tests/support/redis_server.h"

using namespace dq;

namespace {

ShardAddress named(const std::string& host, int port) {
  ShardAddress shard;
  shard.host = host;
  shard.port = port;
  return shard;
}

// A temp dir holding one ini file; removed at the end of the test.
class IniFile {
 public:
  explicit IniFile(const std::string& text) : dir_(test::make_temp_dir("dq-config")) {
    std::ofstream(path()) << text;
  }
  ~IniFile() { test::remove_dir(dir_); }
  std::string path() const { return dir_ + "/dq.ini"; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace

TEST_CASE("parse_shard_list") {
  auto one = parse_shard_list("127.0.0.1:6379");
  REQUIRE(one.is_ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].host == "127.0.0.1");
  CHECK((*one)[0].port == 6379);
  CHECK((*one)[0].password.empty());

  auto several = parse_shard_list(" redis-a:7000:secret , redis-b:7001,redis-c:7002:pa:ss ");
  REQUIRE(several.is_ok());
  REQUIRE(several->size() == 3);
  CHECK((*several)[0].host == "redis-a");
  CHECK((*several)[0].port == 7000);
  CHECK((*several)[0].password == "secret");
  CHECK((*several)[1].name() == "redis-b:7001");
  CHECK((*several)[1].password.empty());
  CHECK((*several)[2].password == "pa:ss");  // a password may hold ':'

  CHECK(parse_shard_list("a:1,,b:2")->size() == 2);
  CHECK(parse_shard_list("")->empty());

  for (const char* bad :
       {"localhost", "a:0", "a:65536", "a:70000", "a:port", "a:12x", ":6379", "a:", "a:1,b"}) {
    CAPTURE(bad);
    auto parsed = parse_shard_list(bad);
    CHECK(parsed.status().code() == Code::kInvalid);
  }
  auto twice = parse_shard_list("a:1, b:2, a:1:pw");
  CHECK(twice.status().code() == Code::kInvalid);
  CHECK(twice.status().message().find("a:1 is listed twice") != std::string::npos);
}

TEST_CASE("shard_order is a stable permutation that ignores list order") {
  std::vector<ShardAddress> shards = {named("10.0.0.1", 6379), named("10.0.0.2", 6379),
                                      named("10.0.0.3", 6379)};
  std::vector<ShardAddress> reversed(shards.rbegin(), shards.rend());
  int homes[3] = {0, 0, 0};
  for (int i = 0; i < 3000; ++i) {
    std::string key = job_key("orders", std::to_string(i));
    auto order = shard_order(shards, key);
    CHECK(order == shard_order(shards, key));
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == std::vector<size_t>{0, 1, 2});
    // Same names in another list order: same shards in the same ranks.
    auto other = shard_order(reversed, key);
    for (size_t rank = 0; rank < 3; ++rank) {
      CHECK(reversed[other[rank]].name() == shards[order[rank]].name());
    }
    homes[order[0]]++;
  }
  for (int count : homes) {
    CHECK(count > 800);  // about 1000 each
  }
  // A fixed value so a change of hash is noticed: placement must never move
  // between builds, or stored jobs would be looked up on the wrong shard first.
  CHECK(stable_hash("orders:1") == 10071507800503923312ULL);
  CHECK(stable_hash("") == 17665956581633026203ULL);
  CHECK(shard_order(shards, "orders:1") == std::vector<size_t>{2, 1, 0});
  CHECK(shard_order(shards, "orders:2") == std::vector<size_t>{0, 2, 1});
  CHECK(stable_hash("orders:1") != stable_hash("orders:2"));
  CHECK(stable_hash("a", 1) != stable_hash("a", 2));
}

TEST_CASE("adding a fourth shard moves about a quarter of the homes, all to it") {
  std::vector<ShardAddress> three = {named("10.0.0.1", 6379), named("10.0.0.2", 6379),
                                     named("10.0.0.3", 6379)};
  std::vector<ShardAddress> four = three;
  four.push_back(named("10.0.0.4", 6379));
  int moved = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string key = job_key("t", "id-" + std::to_string(i));
    size_t before = shard_order(three, key).front();
    size_t after = shard_order(four, key).front();
    if (before != after) {
      moved++;
      CHECK(after == 3);  // only ever to the new shard
    }
  }
  CHECK(moved > 1500);
  CHECK(moved < 3500);
}

TEST_CASE("load_config: defaults and paths relative to the file") {
  IniFile ini("[server]\nworkers = 3\n");
  auto config = load_config(ini.path());
  REQUIRE_MESSAGE(config.is_ok(), config.status().message());
  CHECK(config->path == ini.path());
  CHECK(config->server_workers == 3);
  CHECK(config->server_listen == "127.0.0.1:6780");
  CHECK(config->legacy_listen == "127.0.0.1:6789");
  REQUIRE(config->shards.size() == 1);
  CHECK(config->shards[0].name() == "127.0.0.1:6379");
  CHECK(config->redis_command_timeout_ms == 2000);
  CHECK(config->start_local_redis);
  CHECK(config->backoff_unit_ms == 60000);
  CHECK(config->sqlite_path == ini.dir() + "/dq.db");
  CHECK(config->log_dir == ini.dir() + "/logs");
  CHECK(config->pid_file == ini.dir() + "/logs/dqd.pid");

  IniFile paths(
      "[sqlite]\npath = data/../db/x.db\n[log]\ndir = /var/tmp/dqlogs\nlevel = debug\n"
      "[master]\npid_file = run/dqd.pid\n[redis]\nshards = a:1:pw, b:2\nstart_local = no\n"
      "[delivery]\nbackoff_unit_ms = 250\n");
  auto resolved = load_config(paths.path());
  REQUIRE_MESSAGE(resolved.is_ok(), resolved.status().message());
  CHECK(resolved->sqlite_path == paths.dir() + "/db/x.db");
  CHECK(resolved->log_dir == "/var/tmp/dqlogs");
  CHECK(resolved->log_level == "debug");
  CHECK(resolved->pid_file == paths.dir() + "/run/dqd.pid");
  CHECK(resolved->shards.size() == 2);
  CHECK(resolved->shards[0].password == "pw");
  CHECK_FALSE(resolved->start_local_redis);
  CHECK(resolved->backoff_unit_ms == 250);
}

TEST_CASE("load_config: the shipped conf/dq.ini is valid") {
  auto config = load_config(std::string(DQ_SOURCE_DIR) + "/conf/dq.ini");
  REQUIRE_MESSAGE(config.is_ok(), config.status().message());
  CHECK(config->consumer_processes == 2);
  CHECK(config->sqlite_path == std::string(DQ_SOURCE_DIR) + "/var/dq.db");
}

TEST_CASE("load_config: mistakes are rejected, naming the key") {
  struct Case {
    const char* text;
    const char* mentions;
  };
  const Case cases[] = {
      {"[server]\nlisten2 = 127.0.0.1:1\n", "server.listen2"},
      {"[severs]\nworkers = 2\n", "severs.workers"},
      {"[server]\nworkers = abc\n", "server.workers"},
      {"[server]\nworkers = 2x\n", "server.workers"},
      {"[server]\nworkers = 0\n", "server.workers"},
      {"[timer]\nbatch = 99999999999999999999\n", "timer.batch"},
      {"[delivery]\nbackoff_unit_ms = -5\n", "delivery.backoff_unit_ms"},
      {"[redis]\nstart_local = maybe\n", "redis.start_local"},
      {"[redis]\nshards = a:1,a:1\n", "redis.shards"},
      {"[redis]\nshards = nohost\n", "redis.shards"},
      {"[redis]\nshards = ,\n", "redis.shards"},
      {"[server]\nlisten = 6780\n", "server.listen"},
      {"[log]\nlevel = loud\n", "log.level"},
      {"[server\nworkers = 1\n", ":1: syntax error: '[server'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    IniFile ini(c.text);
    auto config = load_config(ini.path());
    REQUIRE_FALSE(config.is_ok());
    CHECK(config.status().code() == Code::kInvalid);
    CHECK_MESSAGE(config.status().message().find(c.mentions) != std::string::npos,
                  config.status().message());
  }
  auto missing = load_config("/nonexistent/dq.ini");
  CHECK(missing.status().code() == Code::kInvalid);
  CHECK(missing.status().message().find("/nonexistent/dq.ini") != std::string::npos);
}

TEST_CASE("load_config: an error names the file and line, and suggests the key meant") {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      // The right name in the wrong section.
      {"[server]\nworkers = 1\n\n[consumers]\nconcurrency = 8\n",
       ":5: unknown key consumers.concurrency: did you mean [consumer] concurrency?"},
      {"[server]\nworkers = 1\n[timer]\nconcurrency = 8\n",
       ":4: unknown key timer.concurrency: did you mean [consumer] concurrency?"},
      // A typo of a key or of a section.
      {"[server]\nworkerz = 2\n", ":2: unknown key server.workerz: did you mean [server] workers?"},
      {"[severs]\nworkers = 2\n", ":2: unknown key severs.workers: did you mean [server] workers?"},
      {"; a comment\n[redis]\nshard = a:1\n",
       ":3: unknown key redis.shard: did you mean [redis] shards?"},
      // Nothing close: what exists instead.
      {"[queue]\nsize = 5\n", "there is no section [queue]; the sections are server, redis"},
      {"size = 5\n", "a key before any [section]"},
      // Values: the line, and what exactly is wrong.
      {"[server]\nworkers = 1\nlisten = 127.0.0.1:67800\n",
       ":3: server.listen = '127.0.0.1:67800' is not host:port: the port 67800 is out of range (1 "
       "to 65535)"},
      {"[admin]\nlisten = 127.0.0.1:http\n",
       ":2: admin.listen = '127.0.0.1:http' is not "
       "host:port: the port 'http' is not a number"},
      {"[server]\nlisten = 6780\n", "no :port"},
      {"[server]\n\n\nworkers = many\n", ":4: server.workers = 'many' must be an integer"},
      // The last of a repeated key is the one used, and named.
      {"[server]\nworkers = 1\n[server]\nworkers = 0\n", ":4: server.workers = '0'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    IniFile ini(c.text);
    auto config = load_config(ini.path());
    REQUIRE_FALSE(config.is_ok());
    const std::string& message = config.status().message();
    if (std::string(c.says).rfind(":", 0) == 0) {  // right after the file's path
      CHECK_MESSAGE(message.rfind(ini.path() + c.says, 0) == 0, message);
    } else {
      CHECK_MESSAGE(message.find(c.says) != std::string::npos, message);
    }
  }
}

TEST_CASE("parse_datetime_ms") {
  auto ms = parse_datetime_ms("2026-03-01 12:34:56");
  REQUIRE(ms.is_ok());
  CHECK(*ms % 1000 == 0);
  time_t seconds = static_cast<time_t>(*ms / 1000);
  struct tm local {};
  localtime_r(&seconds, &local);
  CHECK(local.tm_year == 2026 - 1900);
  CHECK(local.tm_mon == 2);
  CHECK(local.tm_mday == 1);
  CHECK(local.tm_hour == 12);
  CHECK(local.tm_min == 34);
  CHECK(local.tm_sec == 56);
  CHECK(*parse_datetime_ms("2026-03-01 12:34:57") - *ms == 1000);
  CHECK(parse_datetime_ms("2024-02-29 00:00:00").is_ok());  // leap year

  for (const char* bad :
       {"2026-02-30 00:00:00", "2025-02-29 00:00:00", "2026-13-01 00:00:00", "2026-04-31 10:00:00",
        "2026-03-01 24:00:00", "2026-03-01 12:60:00", "2026-03-01 12:00:61", "2026-03-01T12:00:00",
        "2026-03-01 12:00", "2026-03-01 12:00:00 ", "junk", "", "2026-3-1 1:2:3xxxxx"}) {
    CAPTURE(bad);
    CHECK(parse_datetime_ms(bad).status().code() == Code::kInvalid);
  }
}

TEST_CASE("a cluster's virtual shards rank only a key's home, which never changes") {
  auto shards = parse_cluster_entry("cluster://127.0.0.1:7000,127.0.0.1:7001");
  REQUIRE(shards.is_ok());
  REQUIRE(shards->size() == static_cast<size_t>(kClusterVirtualShards));
  std::vector<int> homes(kClusterVirtualShards, 0);
  for (int i = 0; i < 3200; ++i) {
    std::string key = job_key("orders", std::to_string(i));
    auto order = shard_order(*shards, key);
    // No other virtual shard is asked or tried: one job per id, no
    // cross-node lookup, and a down node's jobs wait for its failover.
    REQUIRE(order.size() == 1);
    CHECK(order == shard_order(*shards, key));
    homes[order[0]]++;
  }
  for (int count : homes) {
    CHECK(count > 120);  // about 200 each: every virtual shard takes jobs
  }
}

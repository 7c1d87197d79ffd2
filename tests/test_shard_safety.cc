// Shard safety: the check itself against a real redis-server reconfigured
// with CONFIG SET, and dqd refusing an unsafe shard at start (with the fix in
// its message) unless [redis] allow_unsafe = yes.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "common/core/clock.h"
#include "common/redis/redis_sync.h"
#include "common/redis/shard_health.h"
#include "common/redis/shard_safety.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"

using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::TestRedis;

namespace {

dq::ShardSafety check(const TestRedis& redis, int warn_percent = 90) {
  dq::RedisConnection connection(redis.shard(), 1000, 2000);
  auto safety = dq::check_shard_safety(connection, warn_percent);
  REQUIRE_MESSAGE(safety.is_ok(), safety.status().message());
  return *safety;
}

bool has(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& line : lines) {
    if (line.find(part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

DqdOptions options_for(const TestRedis& redis, const std::string& extra = "") {
  DqdOptions options;
  options.shards = {redis.address()};
  options.extra_ini = extra;
  return options;
}

// Runs build/dqd in the foreground (with `flag` before -c, e.g. --check);
// returns its exit code and output.
int run_dqd(const DqdProcess& dqd, std::string* output, const std::string& flag = "") {
  std::vector<std::string> argv = {std::string(DQ_BUILD_DIR) + "/dqd"};
  if (!flag.empty()) {
    argv.push_back(flag);
  }
  argv.insert(argv.end(), {"-c", dqd.config_path()});
  return dq::test::run_command(argv, output);
}

}  // namespace

TEST_CASE("the test harness's Redis is safe: AOF on, noeviction") {
  TestRedis redis;
  dq::ShardSafety safety = check(redis);
  CHECK(safety.safe());
  CHECK(safety.persistence == "aof");
  CHECK(safety.eviction_policy == "noeviction");
  CHECK(safety.warnings.empty());
  CHECK(safety.used_memory > 0);
}

TEST_CASE("a shard whose listpack limits are not dq's gets a warning with the fix") {
  TestRedis redis;
  // 128 entries is what dq asks for: no warning.
  redis.command({"CONFIG", "SET", "hash-max-listpack-entries", "128"});
  CHECK(check(redis).warnings.empty());
  // Redis's default, 512, is slower past ~6M pending per shard.
  redis.command({"CONFIG", "SET", "hash-max-listpack-entries", "512"});
  dq::ShardSafety above = check(redis);
  CHECK(above.safe());
  REQUIRE(above.warnings.size() == 1);
  CHECK(has(above.warnings, "hash-max-listpack-entries 512: past ~6M pending jobs"));
  CHECK(has(above.warnings, "CONFIG SET hash-max-listpack-entries 128"));
  redis.command({"CONFIG", "SET", "hash-max-listpack-entries", "64"});
  dq::ShardSafety safety = check(redis);
  CHECK(safety.safe());  // memory, not safety
  REQUIRE(safety.warnings.size() == 1);
  CHECK(has(safety.warnings, "hash-max-listpack-entries 64"));
  CHECK(has(safety.warnings, "CONFIG SET hash-max-listpack-entries 128"));
  redis.command({"CONFIG", "SET", "hash-max-listpack-entries", "128"});
  // Nor Redis's default value limit (64): records with inline bodies.
  redis.command({"CONFIG", "SET", "hash-max-listpack-value", "64"});
  safety = check(redis);
  REQUIRE(safety.warnings.size() == 1);
  CHECK(has(safety.warnings, "hash-max-listpack-value 64"));
  CHECK(has(safety.warnings, "CONFIG SET hash-max-listpack-value 512"));
  redis.command({"CONFIG", "SET", "hash-max-listpack-value", "512"});
  // Nor Redis's default zset limit (128): bucket due zsets past ~6M pending.
  redis.command({"CONFIG", "SET", "zset-max-listpack-entries", "128"});
  safety = check(redis);
  CHECK(safety.safe());
  REQUIRE(safety.warnings.size() == 1);
  CHECK(has(safety.warnings, "zset-max-listpack-entries 128"));
  CHECK(has(safety.warnings, "CONFIG SET zset-max-listpack-entries 256"));
  redis.command({"CONFIG", "SET", "zset-max-listpack-entries", "256"});
  CHECK(check(redis).warnings.empty());
}

TEST_CASE(
    "persistence off, an evicting policy and nearly full memory are each reported with "
    "their fix") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "save", "900 1"});
  redis.command({"CONFIG", "SET", "appendonly", "no"});
  dq::ShardSafety snapshots = check(redis);
  CHECK(snapshots.persistence == "rdb");
  CHECK_FALSE(snapshots.safe());  // a crash loses what came after the last snapshot
  REQUIRE(snapshots.unsafe.size() == 1);
  CHECK(has(snapshots.unsafe, "saves only RDB snapshots (save 900 1), no AOF"));
  CHECK(has(snapshots.unsafe, "CONFIG SET appendonly yes"));
  CHECK(has(snapshots.unsafe, "appendfsync everysec"));

  redis.command({"CONFIG", "SET", "save", ""});
  dq::ShardSafety off = check(redis);
  CHECK(off.persistence == "off");
  CHECK_FALSE(off.safe());
  CHECK(has(off.unsafe, "persistence off"));
  CHECK(has(off.unsafe, "CONFIG SET appendonly yes"));

  redis.command({"CONFIG", "SET", "appendonly", "yes"});
  redis.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  dq::ShardSafety lru = check(redis);
  CHECK(lru.persistence == "aof");
  REQUIRE(lru.unsafe.size() == 1);
  CHECK(has(lru.unsafe, "maxmemory-policy allkeys-lru"));
  CHECK(has(lru.unsafe, "CONFIG SET maxmemory-policy noeviction"));

  redis.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  int64_t used = check(redis).used_memory;
  // maxmemory just above what is used: over 50%, under 100%.
  redis.command({"CONFIG", "SET", "maxmemory", std::to_string(used + used / 4)});
  dq::ShardSafety full = check(redis, 50);
  CHECK(full.safe());
  REQUIRE(full.warnings.size() == 1);
  CHECK(has(full.warnings, "warning above 50%"));
  CHECK(has(full.warnings, "CONFIG SET maxmemory"));
  CHECK(check(redis, 100).warnings.empty());
  redis.command({"CONFIG", "SET", "maxmemory", "0"});
}

TEST_CASE(
    "dqd refuses a shard with maxmemory-policy allkeys-lru at start, with the fix, and "
    "accepts it with allow_unsafe = yes") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  {
    DqdProcess dqd(options_for(redis));
    std::string output;
    CHECK(run_dqd(dqd, &output) == 1);
    CHECK(output.find("maxmemory-policy allkeys-lru") != std::string::npos);
    CHECK(output.find("CONFIG SET maxmemory-policy noeviction") != std::string::npos);
    CHECK(output.find("allow_unsafe = yes") != std::string::npos);
  }
  DqdProcess dqd(options_for(redis, "[redis]\nallow_unsafe = yes\n"));
  dqd.start();
  // The checker keeps reporting it.
  bool reported = false;
  for (int waited = 0; waited < 5000 && !reported; waited += 50) {
    auto health = dq::test::http_request("GET", dqd.base_url() + "/healthz").json();
    for (const auto& shard : health["shards"]) {
      if (!shard.contains("checker")) {
        continue;
      }
      for (const auto& problem : shard["checker"]["problems"]) {
        reported = reported || problem.get<std::string>().find("allkeys-lru") != std::string::npos;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(reported);
  auto metrics = dq::test::http_request("GET", dqd.base_url() + "/metrics");
  CHECK(metrics.body.find("dq_redis_shard_safe{shard=\"" + redis.address() + "\"} 0") !=
        std::string::npos);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("dqd refuses a shard with persistence off at start, and accepts it with allow_unsafe") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "appendonly", "no"});
  redis.command({"CONFIG", "SET", "save", ""});
  {
    DqdProcess dqd(options_for(redis));
    std::string output;
    CHECK(run_dqd(dqd, &output) == 1);
    CHECK(output.find("persistence off") != std::string::npos);
    CHECK(output.find("CONFIG SET appendonly yes") != std::string::npos);
  }
  DqdProcess dqd(options_for(redis, "[redis]\nallow_unsafe = yes\n"));
  dqd.start();
  CHECK(dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("a snapshot-only shard is refused by dqd --check and at start, with the fix") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "appendonly", "no"});
  redis.command({"CONFIG", "SET", "save", "3600 1 300 100"});
  DqdProcess refused(options_for(redis));
  std::string output;
  CHECK(run_dqd(refused, &output, "--check") == 1);
  CAPTURE(output);
  CHECK(output.find("FAIL  shard " + redis.address()) != std::string::npos);
  CHECK(output.find("no AOF: a crash loses every job accepted since the last snapshot") !=
        std::string::npos);
  CHECK(output.find("appendonly yes and appendfsync everysec in redis.conf") != std::string::npos);
  CHECK(run_dqd(refused, &output) == 1);
  CHECK(output.find("saves only RDB snapshots") != std::string::npos);
  CHECK(output.find("allow_unsafe = yes") != std::string::npos);

  // allow_unsafe takes it, and still says what it is.
  DqdProcess allowed(options_for(redis, "[redis]\nallow_unsafe = yes\n"));
  CHECK(run_dqd(allowed, &output, "--check") == 0);
  CHECK(output.find("saves only RDB snapshots") != std::string::npos);

  // Fixed as the message says: accepted.
  redis.command({"CONFIG", "SET", "appendonly", "yes"});
  CHECK(dq::test::wait_until(5000, [&] { return check(redis).persistence == "aof+rdb"; }));
  CHECK(run_dqd(refused, &output, "--check") == 0);
}

TEST_CASE("a reload that brings in an unsafe shard is rejected; the running generation stays") {
  TestRedis safe;
  TestRedis unsafe;
  unsafe.command({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"});
  DqdProcess dqd(options_for(safe));
  dqd.start();
  DqdOptions next = options_for(safe);
  next.shards.push_back(unsafe.address());
  dqd.rewrite_config(next);
  kill(dqd.pid(), SIGUSR2);
  std::string log;
  for (int waited = 0; waited < 5000; waited += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    log = dq::test::http_request("GET", dqd.base_url() + "/healthz").body;
    std::ifstream in(dqd.dir() + "/dqd.out");
    std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (out.find("reload (SIGUSR2) rejected") != std::string::npos) {
      log = out;
      break;
    }
  }
  CHECK(log.find("maxmemory-policy volatile-lru") != std::string::npos);
  auto health = dq::test::http_request("GET", dqd.base_url() + "/healthz").json();
  CHECK(health["shards"].size() == 1);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("the persistence mode (appendonly, appendfsync, rdb save) is checked and shown") {
  TestRedis redis;
  dq::ShardSafety safety = check(redis);
  CHECK(safety.persistence == "aof");
  CHECK(safety.appendfsync == "everysec");
  CHECK(safety.rdb_save == "");
  redis.command({"CONFIG", "SET", "appendfsync", "always"});
  redis.command({"CONFIG", "SET", "save", "3600 1"});
  safety = check(redis);
  CHECK(safety.persistence == "aof+rdb");
  CHECK(safety.appendfsync == "always");
  CHECK(safety.rdb_save == "3600 1");

  // /healthz and dqctl status show it, from the redis checker's report.
  DqdProcess dqd(options_for(redis));
  dqd.start();
  dq::Json shown;
  bool seen = false;
  for (int waited = 0; waited < 8000 && !seen; waited += 100) {
    shown = dq::test::http_request("GET", dqd.base_url() + "/healthz").json()["shards"][0];
    seen = shown.contains("persistence");
    if (!seen) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  REQUIRE(seen);
  CHECK(shown["persistence"]["appendonly"] == true);
  CHECK(shown["persistence"]["appendfsync"] == "always");
  CHECK(shown["persistence"]["rdb_save"] == "3600 1");
  std::string output;
  std::string dqctl = std::string(DQ_BUILD_DIR) + "/dqctl";
  dq::test::run_command({dqctl, "-c", dqd.config_path(), "status"}, &output);
  CAPTURE(output);
  CHECK(output.find("aof(always)+rdb(3600 1)") != std::string::npos);
}

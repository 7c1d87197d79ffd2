// A shard that answers but refuses writes: full (maxmemory, noeviction),
// a read-only replica listed as a shard, one that cannot persist (MISCONF).
// Real redis-servers put in each state as production meets it, a real dqd
// (API server, timer, consumer, redis checker) and a real callback server.
// Adds answer 503 naming the shard and Redis's reason, nothing is written,
// no process spins on the refusals, and the checker, /healthz, dqctl status
// and `dqd --check` call the shard unusable.
#include <dirent.h>
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "common/core/clock.h"
#include "common/core/shard.h"
#include "common/redis/redis_sync.h"
#include "common/redis/shard_health.h"
#include "common/store/job.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/job_records.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::TestRedis;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

bool wait_until(const std::function<bool()>& done, int timeout_ms) {
  return dq::test::wait_within(timeout_ms, done);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Full: any command that may grow memory is refused with OOM.
void make_full(TestRedis& redis) {
  redis.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  redis.command({"CONFIG", "SET", "maxmemory", "1"});
}
void make_roomy(TestRedis& redis) { redis.command({"CONFIG", "SET", "maxmemory", "0"}); }

// A Redis whose `dir` can be moved (protected configs allowed from local).
std::vector<std::string> movable_dir() { return {"--enable-protected-configs", "local"}; }

// MISCONF: an RDB save rule, its dir removed under it, a failed BGSAVE;
// with stop-writes-on-bgsave-error yes Redis then refuses every write.
void make_misconf(TestRedis& redis) {
  std::string gone = redis.dir() + "/gone";
  std::filesystem::create_directories(gone);
  redis.command({"CONFIG", "SET", "dir", gone});
  std::filesystem::remove_all(gone);
  redis.command({"CONFIG", "SET", "save", "3600 1"});
  redis.command({"CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"});
  // SCHEDULE: an AOF rewrite may be running (after a REPLICAOF NO ONE).
  redis.command({"BGSAVE", "SCHEDULE"});
  bool refused = wait_until(
      [&] {
        dq::RedisConnection connection(redis.shard(), 1000, 2000);
        auto set = connection.command({"SET", "misconf-probe", "1"});
        return !set.is_ok() && has(set.status().message(), "MISCONF");
      },
      10000);
  REQUIRE_MESSAGE(refused, "the shard did not enter MISCONF");
}
void end_misconf(TestRedis& redis) {
  redis.command({"CONFIG", "SET", "dir", redis.dir()});
  // A save that works ends it (Redis also retries a failed one every 5 s;
  // while one runs, BGSAVE is refused: ask again).
  REQUIRE(wait_until(
      [&] {
        dq::RedisConnection connection(redis.shard(), 1000, 2000);
        (void)connection.command({"BGSAVE", "SCHEDULE"});
        return connection.command({"SET", "misconf-probe", "1"}).is_ok();
      },
      15000));
  redis.command({"DEL", "misconf-probe"});
}

// `replica` becomes a read-only replica of `primary`, in sync.
void make_replica(TestRedis& replica, TestRedis& primary) {
  replica.command({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
  REQUIRE(wait_until(
      [&] {
        dq::RedisConnection connection(replica.shard(), 1000, 2000);
        auto info = connection.command({"INFO", "replication"});
        return info.is_ok() && has(std::string((*info)->str, (*info)->len), "link_status:up");
      },
      10000));
}

// Lines of every err_*.log of a dqd so far.
std::vector<std::string> err_lines(const DqdProcess& dqd) {
  std::vector<std::string> lines;
  DIR* dir = opendir(dqd.log_dir().c_str());
  if (dir == nullptr) {
    return lines;
  }
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind("err_", 0) != 0) {
      continue;
    }
    std::ifstream in(dqd.log_dir() + "/" + name);
    std::string line;
    while (std::getline(in, line)) {
      lines.push_back(line);
    }
  }
  closedir(dir);
  return lines;
}

size_t count_lines(const std::vector<std::string>& lines, const std::string& part) {
  size_t n = 0;
  for (const auto& line : lines) {
    n += has(line, part) ? 1 : 0;
  }
  return n;
}

dq::CheckedShard checked(const DqdProcess& dqd, const TestRedis& redis) {
  auto report = dq::read_shard_health(dqd.dir() + "/dqd.pid");
  if (!report.is_ok() || report->find(redis.address()) == nullptr) {
    return {};
  }
  return *report->find(redis.address());
}

DqdOptions fast_checker(std::vector<std::string> shards, int timers = 1, int consumers = 0) {
  DqdOptions options;
  options.shards = std::move(shards);
  options.timers = timers;
  options.consumers = consumers;
  options.extra_ini = "[checker]\ninterval_ms = 200\ndown_after = 2\nup_after = 2\n";
  return options;
}

Json job(const std::string& id, int delay_s = 3600) {
  return Json{{"id", id}, {"body", id}, {"delay", delay_s}};
}

// The refusal an add must answer: 503, the shard named, Redis's reason, and
// that nothing was written.
void check_refused(const dq::test::HttpResult& result, const TestRedis& redis,
                   const std::string& redis_reason) {
  CHECK_MESSAGE(result.status == 503, result.status << " " << result.body);
  std::string error = result.json().value("error", std::string());
  CHECK_MESSAGE(has(error, redis.address()), error);
  CHECK_MESSAGE(has(error, redis_reason), error);
}

}  // namespace

TEST_CASE(
    "Redis refuses a script at its first write when full, read-only or unable to persist: "
    "nothing is written, and the blocking transport answers kUnavailable naming the shard") {
  TestRedis redis(movable_dir());
  TestRedis primary;
  redis.command({"SET", "kept", "1"});
  // A script without flags, as dq's are: its first write is refused, so the
  // writes after it never run either.
  const std::vector<std::string> script = {
      "EVAL", "redis.call('HSET', KEYS[1], 'f', 'v'); redis.call('SET', KEYS[2], 'x'); return 1",
      "2", "{dq}:h", "{dq}:k"};
  dq::RedisConnection connection(redis.shard(), 1000, 2000);
  struct State {
    const char* name;
    std::function<void()> enter;
    std::function<void()> leave;
    const char* reason;
    bool refuses_blpop;  // BLPOP is a write but may not grow memory: OOM lets it run
  };
  std::vector<State> states = {
      {"full", [&] { make_full(redis); }, [&] { make_roomy(redis); }, "OOM", false},
      {"read-only", [&] { make_replica(redis, primary); },
       [&] {
         redis.command({"REPLICAOF", "NO", "ONE"});
         redis.command({"SET", "kept", "1"});  // the sync emptied it
       },
       "READONLY", true},
      {"cannot persist", [&] { make_misconf(redis); }, [&] { end_misconf(redis); }, "MISCONF",
       true},
  };
  for (const auto& state : states) {
    CAPTURE(state.name);
    state.enter();
    std::string before = redis.dump_all();
    auto reply = connection.command(script);
    REQUIRE_FALSE(reply.is_ok());
    CHECK(reply.status().code() == dq::Code::kUnavailable);
    CHECK(has(reply.status().message(), redis.address()));
    CHECK(has(reply.status().message(), state.reason));
    CHECK(has(reply.status().message(), "nothing was written"));
    if (state.refuses_blpop) {
      // A BLPOP is refused at once (it pops: a write), which made loops spin.
      int64_t started = dq::monotonic_ms();
      auto popped = connection.command({"BLPOP", "{dq}:wake:timer", "2"}, 3000);
      CHECK(popped.status().code() == dq::Code::kUnavailable);
      CHECK(dq::monotonic_ms() - started < 1000);
    }
    CHECK(redis.dump_all() == before);
    state.leave();
    CHECK(connection.command(script).is_ok());  // the same script runs once the state ends
    redis.command({"DEL", "{dq}:h", "{dq}:k"});
  }
}

TEST_CASE(
    "a full shard: single and batch adds answer 503 naming the shard and OOM, nothing is "
    "written, and adds work again once it has room") {
  TestRedis redis;
  DqdProcess dqd(fast_checker({redis.address()}));
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  REQUIRE(http.post(dqd.jobs_url("orders"), job("before").dump()).status == 201);
  // The timer takes the wake token that add left (BLPOP runs even when full).
  REQUIRE(wait_until(
      [&] {
        return redis.command({"EXISTS", "{dq}:wake:timer"})->integer == 0;
      },
      10000));

  make_full(redis);
  std::string before = redis.dump_all();
  int refused = 0;
  // Straight away (the API server meets Redis's refusal), and once the
  // checker has marked the shard down (the server does not even try it).
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    auto single = http.post(dqd.jobs_url("orders"), job("s-" + std::to_string(round)).dump());
    check_refused(single, redis, "OOM");
    refused += single.status == 503;
    Json batch{{"jobs", Json::array({job("b1-" + std::to_string(round)),
                                     job("b2-" + std::to_string(round))})}};
    auto batched = http.post(dqd.jobs_url("orders") + "/batch", batch.dump());
    REQUIRE(batched.status == 200);
    Json results = batched.json()["results"];
    REQUIRE(results.size() == 2);
    for (const auto& item : results) {
      CHECK_MESSAGE(item["status"] == 503, item.dump());
      CHECK(has(item.value("error", std::string()), redis.address()));
      refused += item["status"] == 503;
    }
    if (round == 0) {
      REQUIRE(wait_until([&] { return !checked(dqd, redis).up; }, 10000));
      dq::CheckedShard shard = checked(dqd, redis);
      CHECK(shard.refuses_writes);
      CHECK(has(shard.reason, "OOM"));
    }
  }
  CHECK(redis.dump_all() == before);
  // Reads still work: the job added before is there.
  CHECK(http.get(dqd.jobs_url("orders") + "/before").status != 500);
  MESSAGE("adds refused with 503: " << refused << " of 6; Redis unchanged");
  CHECK(refused == 6);

  make_roomy(redis);
  REQUIRE(wait_until([&] { return checked(dqd, redis).up; }, 10000));
  CHECK(http.post(dqd.jobs_url("orders"), job("after").dump()).status == 201);
}

TEST_CASE(
    "a full shard beside a healthy one: the adds homed on it are refused (503 naming it, nothing "
    "written anywhere), the others go on; retried once it has room, every job is delivered once") {
  TestRedis a;
  TestRedis b;
  CallbackServer callback;
  DqdOptions options = fast_checker({a.address(), b.address()}, 1, 1);
  DqdProcess dqd(options);
  dqd.add_topic("orders", callback.url());
  dqd.start();
  HttpClient http;
  make_full(b);
  std::vector<dq::ShardAddress> shards = {a.shard(), b.shard()};
  int accepted = 0;                  // 201
  std::vector<std::string> refused;  // 503 naming b, Redis's reason
  int refused_homed_elsewhere = 0;
  int homed_on_full = 0;
  int other = 0;
  for (int n = 0; n < 200; ++n) {
    std::string id = "j-" + std::to_string(n);
    bool home_full = dq::shard_order(shards, dq::job_key("orders", id))[0] == 1;
    homed_on_full += home_full;
    auto added = http.post(dqd.jobs_url("orders"), job(id, 1).dump());
    if (added.status == 201) {
      ++accepted;
    } else if (added.status == 503 && has(added.body, b.address())) {
      refused.push_back(id);
      refused_homed_elsewhere += home_full ? 0 : 1;
      CHECK(added.header("retry-after") == "1");
    } else {
      ++other;
      MESSAGE("add " << id << ": " << added.status << " " << added.body);
    }
  }
  CHECK(other == 0);
  CHECK(homed_on_full > 50);
  CHECK(static_cast<int>(refused.size()) == homed_on_full);
  CHECK(refused_homed_elsewhere == 0);
  CHECK(dq::test::record_count(a) == accepted);  // no copy of a refused add on a
  // Room again: the producer's retries are placed on their home.
  make_roomy(b);
  for (const auto& id : refused) {
    long status = 0;
    CHECK(wait_until(
        [&] {
          status = http.post(dqd.jobs_url("orders"), job(id, 1).dump()).status;
          return status == 201;
        },
        10000));
  }
  REQUIRE(callback.wait_for(200, 30000));
  sleep_ms(1000);
  std::set<std::string> delivered;
  size_t duplicated = 0;
  for (const auto& request : callback.requests()) {
    duplicated += delivered.insert(request.header("x-dq-id")).second ? 0 : 1;
  }
  size_t lost = 200 - delivered.size();
  MESSAGE("accepted " << accepted << ", refused (503) " << refused.size() << " (" << homed_on_full
                      << " homed on the full shard) and retried, delivered " << delivered.size()
                      << ", duplicated " << duplicated << ", lost " << lost);
  CHECK(lost == 0);
  CHECK(duplicated == 0);
}

TEST_CASE(
    "a read-only replica listed as a shard: dqd --check fails, the checker, /healthz and dqctl "
    "status call it down, adds and deletes answer 503, and the timer does not spin") {
  TestRedis primary;
  TestRedis replica;
  {
    DqdProcess check(fast_checker({replica.address()}));
    make_replica(replica, primary);
    std::string output;
    int code = dq::test::run_command(
        {std::string(DQ_BUILD_DIR) + "/dqd", "--check", "-c", check.config_path()}, &output);
    CHECK(code != 0);
    CHECK_MESSAGE(has(output, "FAIL  shard " + replica.address()), output);
    CHECK_MESSAGE(has(output, "is a replica of 127.0.0.1:" + std::to_string(primary.port())),
                  output);
  }
  // A job on the primary, replicated: the replica holds it but cannot delete it.
  {
    DqdProcess writer(fast_checker({primary.address()}, 0));
    writer.add_topic("orders");
    writer.start();
    REQUIRE(dq::test::http_request("POST", writer.jobs_url("orders"), job("held").dump()).status ==
            201);
  }
  REQUIRE(wait_until([&] { return replica.dump_all() == primary.dump_all(); }, 10000));

  DqdProcess dqd(fast_checker({replica.address()}, 1, 1));
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  auto add = http.post(dqd.jobs_url("orders"), job("new").dump());
  check_refused(add, replica, "replica");  // READONLY, or the checker's ROLE verdict
  auto removed = http.del(dqd.jobs_url("orders") + "/held");
  CHECK_MESSAGE(removed.status == 503, removed.body);

  REQUIRE(wait_until([&] { return !checked(dqd, replica).up; }, 10000));
  CHECK(has(checked(dqd, replica).reason, "is a replica of"));
  CHECK(checked(dqd, replica).refuses_writes);
  auto health = http.get(dqd.base_url() + "/healthz");
  CHECK(health.status == 503);
  CHECK(health.json()["shards"][0]["up"] == false);
  CHECK(has(health.json()["shards"][0].value("error", std::string()), "replica"));
  auto status = dq::test::run_dqctl({"-c", dqd.config_path(), "status"}, dqd.dir());
  CHECK_MESSAGE(has(status.out, "DOWN"), status.out << status.err);
  check_refused(http.post(dqd.jobs_url("orders"), job("new2").dump()), replica, "replica");
  CHECK(http.del(dqd.jobs_url("orders") + "/held").status == 503);

  // The timer's BLPOP and the consumer's wake wait are refused at once:
  // each pauses, and logs the error once, then with a count every 10 s.
  size_t before = err_lines(dqd).size();
  sleep_ms(11000);
  std::vector<std::string> lines = err_lines(dqd);
  size_t written = lines.size() - before;
  MESSAGE("err log lines in 11 s with a read-only shard: " << written);
  CHECK(written < 40);
  CHECK(count_lines(lines, "repeated ") >= 1);
  CHECK(replica.dump_all() == primary.dump_all());  // nothing written on either
}

TEST_CASE(
    "a full shard still delivers and ends the jobs it holds (only what stores new data is "
    "refused), so it frees memory") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(fast_checker({redis.address()}, 1, 1));
  dqd.add_topic("orders", callback.url());
  dqd.start();
  HttpClient http;
  constexpr int kJobs = 20;
  for (int n = 0; n < kJobs; ++n) {
    REQUIRE(http.post(dqd.jobs_url("orders"), job("held-" + std::to_string(n), 2).dump()).status ==
            201);
  }
  make_full(redis);
  check_refused(http.post(dqd.jobs_url("orders"), job("refused").dump()), redis, "OOM");
  // Due 2 s after their adds: promoted, delivered and acked while the shard
  // stays over maxmemory (each a function flagged allow-oom).
  CHECK(callback.wait_for(kJobs, 30000));
  CHECK(wait_until([&] { return dq::test::record_count(redis) == 0; }, 30000));
  std::set<std::string> delivered;
  for (const auto& request : callback.requests()) {
    delivered.insert(request.header("x-dq-id"));
  }
  CHECK(delivered.size() == kJobs);
  CHECK(callback.requests().size() == kJobs);
  check_refused(http.post(dqd.jobs_url("orders"), job("still-refused").dump()), redis, "OOM");
  make_roomy(redis);
}

TEST_CASE(
    "a shard that cannot persist (MISCONF): adds answer 503 naming it, nothing is written, the "
    "timer does not spin, and all works again once it can save") {
  TestRedis redis(movable_dir());
  DqdProcess dqd(fast_checker({redis.address()}, 1, 1));
  dqd.add_topic("orders");
  dqd.start();
  HttpClient http;
  REQUIRE(http.post(dqd.jobs_url("orders"), job("before").dump()).status == 201);
  make_misconf(redis);
  std::string data = redis.dump_all();
  check_refused(http.post(dqd.jobs_url("orders"), job("refused").dump()), redis, "MISCONF");
  CHECK(http.del(dqd.jobs_url("orders") + "/before").status == 503);
  REQUIRE(wait_until([&] { return !checked(dqd, redis).up; }, 10000));
  check_refused(http.post(dqd.jobs_url("orders"), job("refused2").dump()), redis, "MISCONF");

  size_t before = err_lines(dqd).size();
  sleep_ms(3000);
  size_t written = err_lines(dqd).size() - before;
  MESSAGE("err log lines in 3 s with a MISCONF shard: " << written);
  CHECK(written < 20);
  CHECK(redis.dump_all() == data);

  end_misconf(redis);
  REQUIRE(wait_until([&] { return checked(dqd, redis).up; }, 10000));
  CHECK(http.post(dqd.jobs_url("orders"), job("after").dump()).status == 201);
  CHECK(wait_until([&] { return count_lines(err_lines(dqd), "works again") >= 1; }, 10000));
}

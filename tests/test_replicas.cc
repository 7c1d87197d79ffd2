// [redis] wait_replicas: an add is confirmed by Redis WAIT on a
// real replica (`redis-server --replicaof`). With the replica stopped
// (SIGSTOP) an add answers 504 replication_timeout and the job is on the
// primary; with wait_replicas = 0 nothing waits. Real redis-servers, a real
// dqd, the HTTP API, the batch route, the legacy port and JobStore.
#include <doctest/doctest.h>
#include <signal.h>

#include <string>

#include "common/core/config.h"
#include "common/store/job.h"
#include "common/store/job_store.h"
#include "common/store/keys.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/redis_server.h"

using dq::Json;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::job_doc;
using dq::test::LegacySocket;
using dq::test::register_topic;
using dq::test::TestRedis;
using dq::test::wait_until;

namespace {

// Long enough for a replica on a busy CI machine; the legacy port's reply
// timeout is raised above it so its answer is the replication_timeout.
constexpr int kWaitTimeoutMs = 1000;

// A primary and one replica of it, in sync.
struct ReplicatedRedis {
  // Full sync at once, not after Redis's default 5 s diskless-sync delay.
  TestRedis primary{std::vector<std::string>{"--repl-diskless-sync-delay", "0"}};
  TestRedis replica{
      std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(primary.port())}};

  ReplicatedRedis() {
    // Streaming, not just synced: after a diskless sync the primary sends
    // writes only after the replica's first ACK (up to 1 s later).
    // A fresh value each time: one that came with the snapshot does not count.
    int written = 0;
    bool synced = wait_until(5000, [&] {
      auto seen = replica.command({"GET", "synced"});
      if (seen->type == REDIS_REPLY_STRING &&
          std::string(seen->str, seen->len) == std::to_string(written)) {
        return true;
      }
      primary.command({"SET", "synced", std::to_string(++written)});
      return false;
    });
    REQUIRE_MESSAGE(synced, "the replica did not sync with the primary");
  }
  ~ReplicatedRedis() { resume(); }

  void pause() { kill(replica.pid(), SIGSTOP); }
  void resume() { kill(replica.pid(), SIGCONT); }
};

bool holds(TestRedis& redis, const std::string& topic, const std::string& id) {
  auto reply = redis.command(
      {"HEXISTS", dq::keys::records_of(dq::job_key(topic, id)), dq::job_key(topic, id)});
  return reply->integer == 1;
}

std::string wait_ini(int replicas) {
  return "[redis]\nwait_replicas = " + std::to_string(replicas) +
         "\nwait_timeout_ms = " + std::to_string(kWaitTimeoutMs) +
         "\n[server]\nlegacy_reply_timeout_ms = " + std::to_string(2 * kWaitTimeoutMs) + "\n";
}

DqdOptions dqd_options(const ReplicatedRedis& redis, int replicas) {
  DqdOptions options;
  options.shards = {redis.primary.address()};
  options.extra_ini = wait_ini(replicas);
  return options;
}

bool is_replication_timeout(const std::string& error) {
  return error.rfind("replication_timeout: ", 0) == 0 &&
         error.find("only 0 of 1 replicas confirmed") != std::string::npos;
}

Json legacy_add(const std::string& id) {
  return Json{{"cmd", "add"},
              {"topic", "orders"},
              {"id", id},
              {"body", Json{{"n", 1}}},
              {"fix_time", std::to_string(dq::test::wall_ms() / 1000 + 600)}};
}

}  // namespace

TEST_CASE("wait_replicas = 1: adds are confirmed by the replica; a stopped replica gives 504") {
  ReplicatedRedis redis;
  DqdProcess dqd(dqd_options(redis, 1));
  register_topic(dqd, "orders", "http://127.0.0.1:9/none");
  dqd.start();
  HttpClient http;
  LegacySocket legacy(dqd.legacy_port());

  // Replica up: 201, and the replica holds the job when the answer comes.
  auto added = http.post(dqd.jobs_url("orders"), job_doc("up-1", Json{{"n", 1}}, 600));
  CHECK_MESSAGE(added.status == 201, added.body);

  CHECK(holds(redis.replica, "orders", "up-1"));
  auto batch = http.post(dqd.jobs_url("orders") + "/batch",
                         Json{{"jobs", Json::array({Json::parse(job_doc("up-2", 1, 600)),
                                                    Json::parse(job_doc("up-3", 2, 600))})}}
                             .dump());
  REQUIRE(batch.status == 200);
  Json results = batch.json()["results"];
  for (const auto& result : results) {
    CHECK(result["status"] == 201);
  }
  CHECK(holds(redis.replica, "orders", "up-3"));
  CHECK(legacy.call(legacy_add("up-4"))["code"] == 1);
  CHECK(holds(redis.replica, "orders", "up-4"));
  // /healthz shows the replica once the checker has looked.
  Json health;
  CHECK_MESSAGE(wait_until(8000,
                           [&] {
                             health = http.get(dqd.base_url() + "/healthz").json();
                             return health["shards"][0].value("connected_replicas", -1) == 1;
                           }),
                health.dump());

  // Replica stopped: stored on the primary, not confirmed: 504 after the wait.
  redis.pause();
  auto unconfirmed = http.post(dqd.jobs_url("orders"), job_doc("down-1", Json{{"n", 1}}, 600));
  CHECK(unconfirmed.status == 504);
  CHECK_MESSAGE(is_replication_timeout(unconfirmed.json().value("error", "")), unconfirmed.body);
  CHECK(holds(redis.primary, "orders", "down-1"));
  // Reads have their own connection: they do not wait behind a WAIT.
  CHECK(http.get(dqd.jobs_url("orders") + "/down-1").status == 200);
  batch = http.post(dqd.jobs_url("orders") + "/batch",
                    Json{{"jobs", Json::array({Json::parse(job_doc("down-2", 1, 600))})}}.dump());
  REQUIRE(batch.status == 200);
  CHECK(batch.json()["results"][0]["status"] == 504);
  Json reply = legacy.call(legacy_add("down-3"));
  CHECK(reply["code"] == 0);
  CHECK_MESSAGE(is_replication_timeout(reply.value("msg", "")), reply.dump());

  // Replica back: the retry of the unconfirmed add is confirmed (200 existing).
  redis.resume();
  auto retried = http.post(dqd.jobs_url("orders"), job_doc("down-1", Json{{"n", 1}}, 600));
  CHECK(retried.status == 200);
  CHECK(retried.json().value("existing", false));
  CHECK(holds(redis.replica, "orders", "down-1"));
}

TEST_CASE("wait_replicas = 0: a stopped replica changes nothing") {
  ReplicatedRedis redis;
  DqdProcess dqd(dqd_options(redis, 0));
  register_topic(dqd, "orders", "http://127.0.0.1:9/none");
  dqd.start();
  redis.pause();
  HttpClient http;
  CHECK(http.post(dqd.jobs_url("orders"), job_doc("off-1", Json{{"n", 1}}, 600)).status == 201);
  LegacySocket legacy(dqd.legacy_port());
  CHECK(legacy.call(legacy_add("off-2"))["code"] == 1);
}

TEST_CASE("JobStore (dqctl's blocking path) waits for the replicas the same way") {
  ReplicatedRedis redis;
  dq::Config config;
  config.shards = {redis.primary.shard()};
  config.redis_wait_replicas = 1;
  config.redis_wait_timeout_ms = kWaitTimeoutMs;
  dq::JobStore store(config);
  dq::DueTime due;
  due.ms = 600000;
  auto confirmed = store.add("orders", "sync-1", "1", due);
  CHECK_MESSAGE(confirmed.is_ok(), confirmed.status().message());
  CHECK(holds(redis.replica, "orders", "sync-1"));

  redis.pause();
  auto unconfirmed = store.add("orders", "sync-2", "1", due);
  REQUIRE_FALSE(unconfirmed.is_ok());
  CHECK(unconfirmed.status().code() == dq::Code::kTimeout);
  CHECK(is_replication_timeout(unconfirmed.status().message()));
  CHECK(holds(redis.primary, "orders", "sync-2"));

  config.redis_wait_replicas = 0;
  dq::JobStore unwaited(config);
  CHECK(unwaited.add("orders", "sync-3", "1", due).is_ok());
}

TEST_CASE("dqd --check warns when a shard has fewer connected replicas than wait_replicas") {
  ReplicatedRedis redis;
  DqdOptions options = dqd_options(redis, 2);
  DqdProcess dqd(options);
  std::string output;
  int status = dq::test::run_command(
      {std::string(DQ_BUILD_DIR) + "/dqd", "--check", "-c", dqd.config_path()}, &output);
  CHECK_MESSAGE(status == 0, output);  // a warning, not a failure
  CHECK_MESSAGE(output.find("1 connected replica(s), fewer than [redis] wait_replicas = 2") !=
                    std::string::npos,
                output);
}

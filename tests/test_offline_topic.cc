// An offline topic only pauses delivery: its jobs can still be added, read
// and deleted over HTTP and the legacy port, none is delivered while it is
// offline, and they go once `dqctl topic online` turns it back on. Real
// redis-server, real dqd (API, timer, consumer), real callback server, real
// dqctl.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::contains;

TEST_CASE("offline topic: jobs are added, read and deleted, and delivered only once online") {
  dq::test::TestRedis redis;
  dq::test::CallbackServer callback;
  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 1;
  // dqctl changes the topic before any dqd ran: with a shared registry
  // nothing has published it yet, so this host keeps its registry alone.
  options.extra_ini = "[registry]\nshared = no\n";
  dq::test::DqdProcess dqd(options);
  dqd.add_topic("paused", callback.url("/hook"));
  REQUIRE(dq::test::run_dqctl({"-c", dqd.config_path(), "topic", "offline", "paused"}, dqd.dir())
              .exit_code == 0);
  REQUIRE_FALSE(dqd.registry().get_topic("paused")->online);
  dqd.start();
  dq::test::HttpClient http;
  std::string jobs = dqd.jobs_url("paused");

  // Adds are taken (HTTP, batch and legacy); the jobs wait.
  REQUIRE(http.post(jobs, R"({"id":"p-1","body":{"n":1},"delay":0})").status == 201);
  REQUIRE(http.post(jobs, R"({"id":"p-2","body":{"n":2},"delay":0})").status == 201);
  auto batch = http.post(jobs + "/batch", R"({"jobs":[{"id":"p-3","body":3,"delay":0}]})");
  REQUIRE(batch.status == 200);
  CHECK(batch.json()["results"][0]["status"] == 201);
  dq::test::LegacySocket legacy(dqd.legacy_port());
  CHECK(legacy.call(
            Json{{"cmd", "add"}, {"topic", "paused"}, {"id", "p-4"}, {"body", 4}})["code"] == 1);

  // GET and DELETE of its pending jobs work, on both ports.
  auto got = http.get(jobs + "/p-1");
  REQUIRE(got.status == 200);
  CHECK(got.json()["body"] == Json{{"n", 1}});
  CHECK(http.del(jobs + "/p-2").status == 204);
  CHECK(http.get(jobs + "/p-2").status == 404);
  Json legacy_get = legacy.call(Json{{"cmd", "get"}, {"topic", "paused"}, {"id", "p-3"}});
  CHECK(legacy_get["code"] == 1);
  CHECK(legacy_get["data"] == 3);
  CHECK(legacy.call(Json{{"cmd", "del"}, {"topic", "paused"}, {"id", "p-4"}})["code"] == 1);

  // Due, but not delivered while offline: promoted to ready, and waiting.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK(callback.count() == 0);
  CHECK(http.get(jobs + "/p-1").json()["state"] == "ready");

  auto online =
      dq::test::run_dqctl({"-c", dqd.config_path(), "topic", "online", "paused"}, dqd.dir());
  REQUIRE_MESSAGE(online.exit_code == 0, online.err);
  int64_t online_at = dq::now_ms();
  REQUIRE(callback.wait_for(2, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // nothing else arrives
  auto requests = callback.requests();
  REQUIRE(requests.size() == 2);
  MESSAGE("delivered ", requests[1].arrived_ms - online_at, " ms after going online");
  std::vector<std::string> ids = {requests[0].header("x-dq-id"), requests[1].header("x-dq-id")};
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::string>{"p-1", "p-3"});  // p-2 and p-4 were deleted
}

TEST_CASE("an unknown topic is still refused with 404") {
  dq::test::TestRedis redis;
  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  dq::test::DqdProcess dqd(options);
  dqd.start();
  dq::test::HttpClient http;
  auto added = http.post(dqd.jobs_url("ghost"), R"({"id":"g","body":1})");
  CHECK(added.status == 404);
  CHECK(contains(added.json()["error"].get<std::string>(), "unknown topic 'ghost'"));
  CHECK(http.get(dqd.jobs_url("ghost") + "/g").status == 404);
  CHECK(http.del(dqd.jobs_url("ghost") + "/g").status == 404);
}

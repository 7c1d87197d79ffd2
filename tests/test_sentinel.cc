// Sentinel-managed shards (sentinel://master@host:port,...): dqd asks the
// sentinels for the primary, follows a failover, and never answers 201 for an
// add the failover lost ([redis] wait_replicas = 1). Real redis-servers, real
// sentinels (tests/support/sentinel_group.h), a real dqd and a real counting
// callback server; the primary is killed with SIGKILL during a stream of adds.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/core/json.h"
#include "common/core/shard.h"
#include "common/redis/redis_sync.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/sentinel_group.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::deliveries_by_id;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::free_port;
using dq::test::HttpClient;
using dq::test::job_doc;
using dq::test::register_topic;
using dq::test::SentinelGroup;
using dq::test::sleep_ms;
using dq::test::TestRedis;
using dq::test::wait_until;
using dq::test::wall_ms;

namespace {

DqdOptions sentinel_options(const std::string& entry, const std::string& extra_ini = "") {
  DqdOptions options;
  options.shards = {entry};
  options.timers = 1;
  options.consumers = 1;
  options.legacy = false;
  options.extra_ini = extra_ini;
  return options;
}

bool holds(TestRedis& redis, const std::string& topic, const std::string& id) {
  auto reply = redis.command(
      {"HEXISTS", dq::keys::records_of(dq::job_key(topic, id)), dq::job_key(topic, id)});
  return reply->integer == 1;
}

// One add's answer, as the producer saw it.
struct Answer {
  std::string id;
  long status = 0;
  int64_t sent_ms = 0;
  std::string body;
};

}  // namespace

TEST_CASE("sentinel:// entries parse to one shard named by its master name") {
  auto one = dq::parse_shard_list("sentinel://mymaster@10.0.0.1:26379, 10.0.0.2:26379,10.0.0.3:1");
  REQUIRE_MESSAGE(one.is_ok(), one.status().message());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].name() == "sentinel://mymaster");
  CHECK((*one)[0].is_sentinel());
  CHECK((*one)[0].password.empty());
  REQUIRE((*one)[0].sentinels.size() == 3);
  CHECK((*one)[0].sentinels[1].text() == "10.0.0.2:26379");

  // The sentinel list ends at the next item with a scheme.
  auto mixed = dq::parse_shard_list(
      "a:1, sentinel://m1:pw:x@s:1,s:2, redis://b:2:secret, c:3, sentinel://m2@s:1");
  REQUIRE_MESSAGE(mixed.is_ok(), mixed.status().message());
  REQUIRE(mixed->size() == 5);
  CHECK((*mixed)[0].name() == "a:1");
  CHECK((*mixed)[1].name() == "sentinel://m1");
  CHECK((*mixed)[1].password == "pw:x");
  CHECK((*mixed)[1].sentinels.size() == 2);
  CHECK((*mixed)[2].name() == "b:2");
  CHECK((*mixed)[2].password == "secret");
  CHECK((*mixed)[3].name() == "c:3");
  CHECK((*mixed)[4].sentinels.size() == 1);

  // The name, not the sentinels, places jobs: other sentinels, same order.
  auto moved = dq::parse_shard_list("a:1, sentinel://m1@x:9, redis://b:2, c:3, sentinel://m2@y:8");
  REQUIRE(moved.is_ok());
  CHECK(dq::shard_order(*mixed, "orders/1") == dq::shard_order(*moved, "orders/1"));

  for (const char* bad :
       {"sentinel://mymaster", "sentinel://@a:1", "sentinel://m@a", "sentinel://m@a:1,b",
        "sentinel://m@a:1,a:1", "sentinel://m@a:1, sentinel://m@b:2", "sentinel://m/x@a:1"}) {
    CAPTURE(bad);
    auto parsed = dq::parse_shard_list(bad);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.status().code() == dq::Code::kInvalid);
  }
}

TEST_CASE("dqd with a sentinel:// shard takes adds and delivers them") {
  SentinelGroup group(1);
  CallbackServer callback;
  DqdProcess dqd(sentinel_options(group.shard_entry()));
  register_topic(dqd, "orders", callback.url());
  dqd.start();
  HttpClient http;
  constexpr int kJobs = 20;
  for (int i = 0; i < kJobs; ++i) {
    auto added = http.post(dqd.jobs_url("orders"), job_doc("s" + std::to_string(i), i, 0));
    REQUIRE_MESSAGE(added.status == 201, added.body);
  }
  // On the primary the sentinels name, replicated to the replica.
  REQUIRE(http.post(dqd.jobs_url("orders"), job_doc("later", 1, 600)).status == 201);
  CHECK(holds(group.primary(), "orders", "later"));
  CHECK(wait_until(5000, [&] { return holds(group.node(1), "orders", "later"); }));
  REQUIRE(callback.wait_for(kJobs, 30000));
  sleep_ms(500);  // a duplicate would show by now
  auto delivered = deliveries_by_id(callback);
  CHECK(delivered.size() == kJobs);
  for (const auto& [id, times] : delivered) {
    CHECK_MESSAGE(times == 1, id);
  }
  Json health = http.get(dqd.base_url() + "/healthz").json();
  CHECK(health["shards"][0]["name"] == "sentinel://mymaster");
  CHECK(health["shards"][0]["up"] == true);
  CHECK(health["shards"][0].value("primary", "") == group.primary().address());
}

TEST_CASE("a primary killed during adds with wait_replicas = 1: every 201 is delivered once") {
  // Two replicas: after the failover the promoted one still has a replica
  // to confirm adds (wait_replicas = 1).
  SentinelGroup group(2);
  CallbackServer callback;
  DqdProcess dqd(sentinel_options(group.shard_entry(),
                                  "[redis]\nwait_replicas = 1\nwait_timeout_ms = 1000\n"));
  register_topic(dqd, "orders", callback.url());
  dqd.start();

  // Every job is due 8 s after its add: none is delivered before the kill,
  // so no delivery's acknowledgement can be lost with the old primary (that
  // would be a legitimate redelivery, not what this test is about).
  constexpr double kDelayS = 8;
  std::mutex mutex;
  std::vector<Answer> answers;
  std::atomic<bool> stop{false};
  // Three producers, so that adds are in flight when the primary dies.
  constexpr int kProducers = 3;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      HttpClient http;
      for (int i = 0; !stop; ++i) {
        Answer answer;
        answer.id = "p" + std::to_string(p) + "-" + std::to_string(i);
        answer.sent_ms = wall_ms();
        auto result =
            http.request("POST", dqd.jobs_url("orders"), job_doc(answer.id, i, kDelayS), 15000);
        answer.status = result.status;
        answer.body = result.body;
        {
          std::lock_guard<std::mutex> lock(mutex);
          answers.push_back(answer);
        }
        sleep_ms(10);
      }
    });
  }
  auto count_201_after = [&](int64_t since_ms) {
    std::lock_guard<std::mutex> lock(mutex);
    int n = 0;
    for (const auto& answer : answers) {
      n += answer.status == 201 && answer.sent_ms >= since_ms ? 1 : 0;
    }
    return n;
  };

  // A steady stream first (at most 3 s, well inside the jobs' delay).
  int64_t started_ms = wall_ms();
  wait_until(3000, [&] { return count_201_after(0) >= 30; });
  int old_port = group.primary().port();
  // Held for 300 ms first (SIGSTOP), so that adds are waiting on it when it
  // dies: their outcome is unknown (504).
  kill(group.primary().pid(), SIGSTOP);
  sleep_ms(300);
  int64_t killed_ms = wall_ms();
  group.primary().kill9();

  int new_port = group.wait_for_new_primary(old_port, 60000);
  int64_t promoted_ms = wall_ms();
  bool followed = wait_until(60000, [&] { return count_201_after(promoted_ms) >= 20; });
  stop = true;
  for (auto& producer : producers) {
    producer.join();
  }
  REQUIRE_MESSAGE(new_port != 0, "no replica was promoted within 60 s");
  REQUIRE_MESSAGE(followed, "dq did not take adds again within 60 s of the promotion");
  HttpClient http;
  Json health = http.get(dqd.base_url() + "/healthz").json();
  CHECK(health["shards"][0].value("primary", "") == "127.0.0.1:" + std::to_string(new_port));

  // The answers: all 201 before the kill; 201, 503 or 504 in the window.
  int64_t first_201_after_kill = 0;
  int ok_before = 0;
  int ok_after = 0;
  int unavailable = 0;
  int unknown = 0;
  int other = 0;
  std::vector<std::string> accepted;
  std::vector<std::string> unknown_ids;
  std::vector<std::string> refused_ids;
  for (const auto& answer : answers) {
    CAPTURE(answer.body);
    if (answer.status == 201) {
      accepted.push_back(answer.id);
      if (answer.sent_ms < killed_ms) {
        ++ok_before;
      } else {
        ++ok_after;
        if (first_201_after_kill == 0) {
          first_201_after_kill = answer.sent_ms;
        }
      }
    } else if (answer.status == 503) {
      if (unavailable == 0) {
        MESSAGE("first 503: " << answer.body);
      }
      ++unavailable;
      refused_ids.push_back(answer.id);
    } else if (answer.status == 504) {
      if (unknown == 0) {
        MESSAGE("first 504: " << answer.body);
      }
      ++unknown;
      unknown_ids.push_back(answer.id);
    } else {
      ++other;
      FAIL_CHECK("answer " << answer.status << " for " << answer.id << ": " << answer.body);
    }
  }
  MESSAGE("adds: " << answers.size() << " (201 before the kill " << ok_before << ", 201 after "
                   << ok_after << ", 503 " << unavailable << ", 504 " << unknown << ", other "
                   << other << "); stream " << killed_ms - started_ms << " ms before the kill; "
                   << "sentinels promoted port " << new_port << " " << promoted_ms - killed_ms
                   << " ms after the kill; first 201 after the kill sent "
                   << first_201_after_kill - killed_ms << " ms after it");
  CHECK(other == 0);
  CHECK(ok_before >= 1);
  CHECK(ok_after >= 20);
  CHECK(unknown >= 1);  // the adds held by the stopped primary
  // dq follows within seconds of the promotion (generous for a loaded machine).
  CHECK(first_201_after_kill - promoted_ms < 20000);

  // Every 201 delivered exactly once; a 503 never; a 504 at most once.
  REQUIRE(wait_until(60000, [&] {
    auto delivered = deliveries_by_id(callback);
    for (const auto& id : accepted) {
      if (delivered.count(id) == 0) return false;
    }
    return true;
  }));
  sleep_ms(1000);  // a duplicate would show by now
  auto delivered = deliveries_by_id(callback);
  int lost = 0;
  int duplicated = 0;
  for (const auto& id : accepted) {
    lost += delivered.count(id) == 0 ? 1 : 0;
    duplicated += delivered.count(id) && delivered[id] > 1 ? 1 : 0;
  }
  int refused_delivered = 0;
  for (const auto& id : refused_ids) {
    refused_delivered += delivered.count(id) ? 1 : 0;
  }
  int unknown_delivered = 0;
  for (const auto& id : unknown_ids) {
    unknown_delivered += delivered.count(id) ? 1 : 0;
    CHECK_MESSAGE(delivered[id] <= 1, id);
  }
  MESSAGE("delivered: " << accepted.size() << " accepted, " << lost << " lost, " << duplicated
                        << " duplicated; " << unknown_delivered << " of " << unknown
                        << " unknown-outcome adds delivered; " << refused_delivered
                        << " refused adds delivered");
  CHECK(lost == 0);
  CHECK(duplicated == 0);
  CHECK(refused_delivered == 0);

  // The redis checker looks at the promoted primary: up, writable, safe, its
  // replica counted, no data loss reported (the identity key was replicated).
  Json checker;
  CHECK_MESSAGE(wait_until(15000,
                           [&] {
                             checker = http.get(dqd.base_url() + "/healthz").json()["shards"][0];
                             const Json& seen = checker.value("checker", Json::object());
                             return seen.value("up", false) &&
                                    !seen.value("refuses_writes", true) &&
                                    seen.value("connected_replicas", -1) >= 1;
                           }),
                checker.dump());
  CHECK(checker["checker"].value("data_lost_total", -1) == 0);
  CHECK(checker["checker"].value("problems", Json::array()).empty());
}

TEST_CASE("SENTINEL FAILOVER with the primary still running: dq follows the demotion") {
  SentinelGroup group(1);
  DqdProcess dqd(sentinel_options(group.shard_entry(), "[redis]\nwait_replicas = 1\n"));
  register_topic(dqd, "orders", "http://127.0.0.1:9/none");
  dqd.start();
  HttpClient http;
  REQUIRE(http.post(dqd.jobs_url("orders"), job_doc("before", 1, 600)).status == 201);

  int old_port = group.primary().port();
  // Sentinel may refuse while it still learns the replica's state: retry.
  std::string refused;
  CHECK_MESSAGE(wait_until(15000, [&] { return (refused = group.sentinel(0).failover()).empty(); }),
                refused);
  int new_port = group.wait_for_new_primary(old_port, 30000);
  REQUIRE_MESSAGE(new_port != 0, "no replica was promoted within 30 s");

  // The old primary keeps running as a replica (READONLY to writes, and
  // Sentinel closes its clients): adds answer 503/504 until dq follows.
  std::map<long, int> answers;
  int n = 0;
  bool followed = wait_until(30000, [&] {
    auto answer = http.post(dqd.jobs_url("orders"), job_doc("after" + std::to_string(n++), 1, 600));
    long status = answer.status;
    if (status != 201 && answers[status] == 0) {
      MESSAGE("first " << status << ": " << answer.body);
    }
    ++answers[status];
    return status == 201;
  });
  REQUIRE(followed);
  for (const auto& [status, count] : answers) {
    CAPTURE(status);
    CHECK((status == 201 || status == 503 || status == 504));
    MESSAGE("answer " << status << ": " << count);
  }
  int home = group.node_on(new_port);
  REQUIRE(home >= 0);
  CHECK(holds(group.node(static_cast<size_t>(home)), "orders", "before"));
  CHECK(holds(group.node(static_cast<size_t>(home)), "orders", "after" + std::to_string(n - 1)));
  Json health = http.get(dqd.base_url() + "/healthz").json();
  CHECK(health["shards"][0].value("primary", "") == "127.0.0.1:" + std::to_string(new_port));
}

TEST_CASE("a wrong master name or no reachable sentinel: the shard is down, clearly, no crash") {
  SentinelGroup group(1);
  HttpClient http;
  int nobody_a = free_port();
  int nobody_b = free_port();
  struct Case {
    std::string entry;
    std::string says;
  };
  std::vector<Case> cases = {{group.shard_entry("nosuchmaster"), "does not know the master name"},
                             {"sentinel://mymaster@127.0.0.1:" + std::to_string(nobody_a) +
                                  ",127.0.0.1:" + std::to_string(nobody_b),
                              "sentinel 127.0.0.1:" + std::to_string(nobody_a)}};
  for (const auto& c : cases) {
    CAPTURE(c.entry);
    DqdProcess dqd(sentinel_options(c.entry));
    register_topic(dqd, "orders", "http://127.0.0.1:9/none");
    dqd.start();
    // The add is refused with nothing written (503), saying why.
    auto added = http.post(dqd.jobs_url("orders"), job_doc("x1", 1, 0));
    CHECK(added.status == 503);
    Json health;
    CHECK_MESSAGE(wait_until(10000,
                             [&] {
                               health = http.get(dqd.base_url() + "/healthz").json();
                               return health["shards"][0].value("error", "").find(c.says) !=
                                      std::string::npos;
                             }),
                  health.dump());
    MESSAGE("shard down: " << health["shards"][0].value("error", ""));
    CHECK(health["shards"][0]["name"].get<std::string>().rfind("sentinel://", 0) == 0);
    CHECK(health["shards"][0]["up"] == false);
    // Every role still runs a few seconds later.
    sleep_ms(1500);
    CHECK(dqd.running());
    CHECK(http.post(dqd.jobs_url("orders"), job_doc("x2", 1, 0)).status == 503);
    CHECK(dqd.stop() == 0);
  }
  // The right name on the same sentinels works.
  dq::RedisConnection connection(group.shard(), 500, 1000);
  auto role = connection.command({"ROLE"});
  REQUIRE_MESSAGE(role.is_ok(), role.status().message());
  CHECK(connection.address().port == group.primary().port());
}

TEST_CASE("a stale sentinel naming a replica is skipped: ROLE is checked on the node named") {
  SentinelGroup group(1);
  // A sentinel whose "mymaster" is the replica: it names the replica.
  dq::test::TestSentinel stale(SentinelGroup::kMasterName, group.node(1).port());
  REQUIRE(stale.primary_port() == group.node(1).port());
  std::string real = group.shard_entry().substr(std::string("sentinel://mymaster@").size());
  std::string stale_first = "sentinel://mymaster@" + stale.address() + "," + real;

  // Blocking connections (timers, consumers, dqctl): the next sentinel's answer.
  auto shards = dq::parse_shard_list(stale_first);
  REQUIRE(shards.is_ok());
  dq::RedisConnection connection((*shards)[0], 500, 1000);
  auto role = connection.command({"ROLE"});
  REQUIRE_MESSAGE(role.is_ok(), role.status().message());
  CHECK(connection.address().port == group.primary().port());

  // The API server's async connections: adds land on the primary.
  DqdProcess dqd(sentinel_options(stale_first));
  register_topic(dqd, "orders", "http://127.0.0.1:9/none");
  dqd.start();
  HttpClient http;
  long status = 0;
  CHECK(wait_until(10000, [&] {
    status = http.post(dqd.jobs_url("orders"), job_doc("k1", 1, 600)).status;
    return status == 201;
  }));
  CHECK(status == 201);
  CHECK(holds(group.primary(), "orders", "k1"));
  Json health = http.get(dqd.base_url() + "/healthz").json();
  CHECK(health["shards"][0].value("primary", "") == group.primary().address());
  CHECK(dqd.stop() == 0);

  // Only the stale sentinel: down, saying the node is not the primary; nothing written.
  DqdProcess only_stale(sentinel_options("sentinel://mymaster@" + stale.address()));
  register_topic(only_stale, "orders", "http://127.0.0.1:9/none");
  only_stale.start();
  CHECK(http.post(only_stale.jobs_url("orders"), job_doc("k2", 1, 600)).status == 503);
  CHECK_MESSAGE(
      wait_until(10000,
                 [&] {
                   health = http.get(only_stale.base_url() + "/healthz").json();
                   return health["shards"][0].value("error", "").find("not the primary") !=
                          std::string::npos;
                 }),
      health.dump());
  MESSAGE("shard down: " << health["shards"][0].value("error", ""));
  CHECK_FALSE(holds(group.node(1), "orders", "k2"));
  CHECK_FALSE(holds(group.primary(), "orders", "k2"));
}

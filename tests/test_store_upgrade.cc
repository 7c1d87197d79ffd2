// The upgrade from store v3 (held copies, {dq}:moved markers, tombstones,
// jobs off their home) to store v4, one home per id
// (common/store/store_upgrade.h), with that layout written as store v3 wrote
// it: through the store directly, then end to end through a real dqd whose
// master upgrades before its roles start, every job counted.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "common/core/json.h"
#include "common/registry/registry.h"
#include "common/registry/shard_workflow.h"
#include "common/store/store_upgrade.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

namespace {

// Store v3's keys for what this upgrade removes.
const std::string kHeldPrefix = "{dq}:held:";
const std::string kMoved = "{dq}:moved";
const std::string kTombs = "{dq}:tombs";

// A copy store v3 kept held on `redis` until shard `against` was asked: its
// record in the flat hash (state h), its key in {dq}:held:<against>, counted.
void write_held(TestRedis& redis, const std::string& key, const std::string& body, int64_t due,
                int64_t created, const std::string& against) {
  static int incarnation = 1000;
  std::string meta = "h|0|" + std::to_string(due) + "|" + std::to_string(created) + "|" +
                     std::to_string(++incarnation) + "||";
  redis.command({"HSET", keys::flat_records(), key, meta + "\n" + body});
  redis.command({"ZADD", kHeldPrefix + against, std::to_string(due), key});
  redis.command({"HINCRBY", keys::counts(), key.substr(0, key.find(':')) + ":h", "1"});
}

// An ordinary delayed job written on `redis`, whatever its home: a store
// over that shard alone places it there.
int64_t write_on(TestRedis& redis, const std::string& topic, const std::string& id,
                 const std::string& body, int64_t delay_ms) {
  auto alone = store_over({&redis});
  auto added = alone->add(topic, id, body, in_ms(delay_ms));
  REQUIRE(added.is_ok());
  return added->due_ms;
}

// The id of `topic` numbered from `prefix` whose home among `store`'s
// shards is `home`.
std::string homed(const BlockingJobStore& store, const std::string& topic, size_t home,
                  const std::string& prefix) {
  return id_homed_on(store, topic, home, prefix);
}

size_t held_sets(TestRedis& redis) { return redis.command({"KEYS", kHeldPrefix + "*"})->elements; }

Config config_over(const std::vector<TestRedis*>& servers) {
  Config config;
  for (TestRedis* server : servers) {
    config.shards.push_back(server->shard());
  }
  config.redis_connect_timeout_ms = 500;
  config.redis_command_timeout_ms = 2000;
  return config;
}

}  // namespace

TEST_CASE("store v3 -> v4: held copies settled once, markers and tombstones gone, every job home") {
  TestRedis a, b;
  auto both = store_over({&a, &b});
  const std::string name_a = a.shard().name();
  int64_t now = redis_time_ms(a);
  // k1 on its home a; b held a copy of it (same id) while a was down: a duplicate.
  std::string k1 = homed(*both, "t", 0, "dup-");
  write_on(a, "t", k1, "{\"v\":1}", 60000);
  write_held(b, job_key("t", k1), "{\"v\":1}", now + 60000, now, name_a);
  // k2: held on b for a, which never had it: becomes a job, and moves home to a.
  std::string k2 = homed(*both, "t", 0, "new-");
  write_held(b, job_key("t", k2), "{\"v\":2}", now + 60000, now, name_a);
  // k3: deleted on a (tombstone) after b's copy was made: a duplicate.
  std::string k3 = homed(*both, "t", 0, "deleted-");
  write_held(b, job_key("t", k3), "{\"v\":3}", now + 60000, now - 5000, name_a);
  a.command({"ZADD", kTombs, std::to_string(now - 2000), job_key("t", k3)});
  // k4: a tombstone older than b's copy (beyond the 1 s slack): a new job, kept.
  std::string k4 = homed(*both, "t", 0, "readded-");
  write_held(b, job_key("t", k4), "{\"v\":4}", now + 61000, now, name_a);
  a.command({"ZADD", kTombs, std::to_string(now - 5000), job_key("t", k4)});
  // k5: a job v3 verified on b (home a down then): a marker on a; it moves home.
  std::string k5 = homed(*both, "t", 0, "marked-");
  int64_t due5 = write_on(b, "t", k5, "{\"v\":5}", 62000);
  a.command({"HSET", kMoved, job_key("t", k5), b.shard().name()});
  // k6: on b with no marker (a v3 registry shard's ids stayed on their old
  // homes): moves home too.
  std::string k6 = homed(*both, "t", 0, "stayed-");
  int64_t due6 = write_on(b, "t", k6, "{\"v\":6}", 63000);
  // k7: held on b for a shard no longer listed: released, then home.
  std::string k7 = homed(*both, "t", 0, "orphan-");
  write_held(b, job_key("t", k7), "{\"v\":7}", now + 64000, now, "10.9.9.9:6379");
  // k9: a dead letter on b, off its home: moves home dead.
  std::string k9 = homed(*both, "t", 0, "dead-");
  write_on(b, "t", k9, "{\"v\":9}", 0);
  {
    auto alone = store_over({&b});
    auto reserved = reserve_one(*alone, "t", 30000, "r-dead");
    CHECK(reserved.job.id == k9);
    auto failed = alone->fail(0, "t", k9, reserved.lease, 1000, 1, "boom");
    REQUIRE(failed.is_ok());
    REQUIRE(*failed == FailOutcome::kDead);
  }
  // k8: ready on b, off its home, left by the stopped dq: delayed, then home.
  std::string k8 = homed(*both, "t", 0, "ready-");
  write_on(b, "t", k8, "{\"v\":8}", 0);
  REQUIRE(store_over({&b})->promote(0, 100)->moved == 1);
  // k10: at home on b, with a held copy on a for b: a duplicate.
  std::string k10 = homed(*both, "t", 1, "home-b-");
  write_on(b, "t", k10, "{\"v\":10}", 60000);
  write_held(a, job_key("t", k10), "{\"v\":10}", now + 60000, now, b.shard().name());
  for (TestRedis* each : {&a, &b}) {
    each->command({"SET", "{dq}:store_version", "3"});
  }
  CHECK(held_sets(b) == 2);

  REQUIRE(upgrade_stores(config_over({&a, &b})).is_ok());

  for (TestRedis* each : {&a, &b}) {
    CHECK(text(each->command({"GET", "{dq}:store_version"}).get()) == "4");
    CHECK(held_sets(*each) == 0);
    CHECK(integer(*each, {"EXISTS", kMoved, kTombs}) == 0);
    check_consistent(*each);
  }
  // Every job is on its home, once; the duplicates are gone.
  auto on = [](TestRedis& redis, const std::string& id) {
    return record_of(redis, job_key("t", id)).has_value();
  };
  for (const auto& id : {k1, k2, k4, k5, k6, k7, k8, k9}) {
    CAPTURE(id);
    CHECK(on(a, id));
    CHECK_FALSE(on(b, id));
  }
  CHECK_FALSE(on(a, k3));
  CHECK_FALSE(on(b, k3));
  CHECK(on(b, k10));
  CHECK_FALSE(on(a, k10));
  CHECK(stat(b, "t:duplicate") == 2);  // k1, k3
  CHECK(stat(a, "t:duplicate") == 1);  // k10
  // Due times, bodies and states kept.
  auto store = store_over({&a, &b});
  CHECK(store->get("t", k5)->due_at_ms == due5);
  CHECK(store->get("t", k6)->due_at_ms == due6);
  CHECK(store->get("t", k2)->due_at_ms == now + 60000);
  CHECK(store->get("t", k2)->body == "{\"v\":2}");
  CHECK(store->get("t", k8)->state == JobState::kDelayed);
  CHECK(store->get("t", k9)->state == JobState::kDead);
  CHECK(store->get("t", k9)->last_error == "boom");
  CHECK(store->get("t", k1)->body == "{\"v\":1}");
  // Once is enough: again, nothing changes.
  std::string a_after = a.dump_all();
  std::string b_after = b.dump_all();
  REQUIRE(upgrade_stores(config_over({&a, &b})).is_ok());
  CHECK(a.dump_all() == a_after);
  CHECK(b.dump_all() == b_after);
}

TEST_CASE(
    "a shard added at runtime is a current store: a checker's upgrade, whatever its view of the "
    "change, never puts back a job in flight on it (it would be delivered twice)") {
  TestRedis old_shard, new_shard;
  Config config = config_over({&old_shard});
  REQUIRE(upgrade_stores(config).is_ok());  // as the master's start leaves it
  std::string dir = dq::test::make_temp_dir("dq-upgrade-added");
  {
    auto registry = Registry::open(dir + "/dq.db");
    REQUIRE(registry.is_ok());
    auto added = plan_shard_add(config, **registry, new_shard.address(), "");
    REQUIRE_MESSAGE(added.is_ok(), added.status().message());
  }
  std::filesystem::remove_all(dir);
  // Once it takes jobs, a job whose home it is goes out to its callback:
  // the shard's timer promotes it (its first promote would convert a store
  // v2 batch first), the consumer reserves it.
  Config two = config_over({&old_shard, &new_shard});
  std::string id = homed(*store_over({&old_shard, &new_shard}), "t", 1, "flying-");
  auto on_new = store_over({&new_shard});
  REQUIRE(on_new->add("t", id, "{\"v\":1}", kNow).is_ok());
  ReservedJob flying = reserve_one(*on_new, "t", 60000, "r-flying");
  REQUIRE(flying.job.id == id);
  // A checker that still sees the shard joining, and one that sees it
  // draining (to both the job is off its home), each run the upgrade
  // their generation tries 5 s after its start.
  for (ShardRole role : {ShardRole::kJoining, ShardRole::kDraining}) {
    Config view = two;
    view.shard_roles[new_shard.address()] = role;
    REQUIRE(upgrade_stores(view).is_ok());
  }
  CHECK(text(new_shard.command({"GET", "{dq}:store_version"}).get()) == "4");
  // The job is still in flight where it was: nothing can deliver it again.
  auto record = record_of(new_shard, job_key("t", id));
  REQUIRE(record.has_value());
  CHECK(record->substr(0, 2) == "w|");
  CHECK_FALSE(record_of(old_shard, job_key("t", id)).has_value());
  CHECK(store_over({&old_shard})->promote(0, 100)->moved == 0);
  CHECK(on_new->promote(0, 100)->moved == 0);
  auto acked = ack(*on_new, 0, "t", id, flying.lease);
  REQUIRE(acked.is_ok());
  CHECK(*acked == AckOutcome::kAcked);
  check_consistent(old_shard);
  check_consistent(new_shard);
}

TEST_CASE(
    "store v3 -> v4 with the shard a copy waits for down: not done, nothing lost; done once "
    "it answers") {
  TestRedis a, b;
  auto both = store_over({&a, &b});
  int64_t now = redis_time_ms(b);
  std::string k = homed(*both, "t", 0, "waits-");
  write_held(b, job_key("t", k), "{}", now + 60000, now, a.shard().name());
  for (TestRedis* each : {&a, &b}) {
    each->command({"SET", "{dq}:store_version", "3"});
  }
  a.stop();
  Status first = upgrade_stores(config_over({&a, &b}));
  CHECK(first.code() == Code::kUnavailable);
  CHECK(first.message().find(a.shard().name()) != std::string::npos);
  CHECK(text(b.command({"GET", "{dq}:store_version"}).get()) == "3");
  CHECK(record_of(b, job_key("t", k)).has_value());  // still held, not delivered
  CHECK(store_over({&b})->promote(0, 100)->moved == 0);
  restart(a);
  REQUIRE(upgrade_stores(config_over({&a, &b})).is_ok());
  CHECK(record_of(a, job_key("t", k)).has_value());
  CHECK_FALSE(record_of(b, job_key("t", k)).has_value());
  check_consistent(a);
  check_consistent(b);
}

TEST_CASE(
    "a dqd started on a store v3 with held copies and jobs off their home delivers each job "
    "once, none early, no duplicate") {
  TestRedis a, b;
  CallbackServer callback;
  auto both = store_over({&a, &b});
  const std::string name_a = a.shard().name();
  int64_t now = redis_time_ms(a);
  std::map<std::string, int64_t> due;  // id -> due (Redis ms): each delivered once, not before
  std::set<std::string> duplicates;    // held copies of ids their home holds
  for (int i = 0; i < 40; ++i) {
    std::string id = homed(*both, "orders", 0, "v3-" + std::to_string(i) + "-");
    std::string body = "{\"i\":" + std::to_string(i) + "}";
    switch (i % 4) {
      case 0:  // on its home, and a held copy of it on b
        due[id] = write_on(a, "orders", id, body, 2000);
        write_held(b, job_key("orders", id), body, due[id], now, name_a);
        duplicates.insert(id);
        break;
      case 1:  // held on b only
        due[id] = now + 2500;
        write_held(b, job_key("orders", id), body, due[id], now, name_a);
        break;
      case 2:  // on b, off its home, with a marker on a
        due[id] = write_on(b, "orders", id, body, 3000);
        a.command({"HSET", kMoved, job_key("orders", id), b.shard().name()});
        break;
      default:  // on b, off its home, no marker
        due[id] = write_on(b, "orders", id, body, 3500);
    }
  }
  for (TestRedis* each : {&a, &b}) {
    each->command({"SET", "{dq}:store_version", "3"});
  }
  DqdProcess dqd(one_timer_one_consumer({a.address(), b.address()}));
  register_topic(dqd, "orders", callback.url());
  dqd.start();
  REQUIRE(callback.wait_for(due.size(), 60000));
  sleep_ms(1500);  // a duplicate would show up by now
  std::map<std::string, int> count;
  int early = 0;
  int64_t skew = wall_ms() - redis_time_ms(a);  // the callback host's clock is this machine's
  for (const auto& request : callback.requests()) {
    std::string id = request.header("x-dq-id");
    ++count[id];
    early += due.count(id) && request.arrived_ms < due[id] + skew;
  }
  int lost = 0, twice = 0;
  for (const auto& [id, at] : due) {
    lost += count[id] == 0;
    twice += count[id] > 1;
  }
  MESSAGE("store v3 jobs: " << due.size() << " (" << duplicates.size()
                            << " with a held duplicate), delivered " << count.size() << ", lost "
                            << lost << ", twice " << twice << ", early " << early);
  CHECK(lost == 0);
  CHECK(twice == 0);
  CHECK(early == 0);
  CHECK(count.size() == due.size());
  for (TestRedis* each : {&a, &b}) {
    CHECK(text(each->command({"GET", "{dq}:store_version"}).get()) == "4");
    CHECK(held_sets(*each) == 0);
  }
  CHECK(dqd.stop() == 0);
}

// Shards that go down, come back or are added, through BlockingJobStore
// (AsyncJobStore underneath): held copies, claim and settle, tombstones,
// AUTH, and a hung Redis whose outcome is unknown.
#include <doctest/doctest.h>
#include <signal.h>

#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

// ====================================================================== shards

TEST_CASE("two shards: spread, one down, back up") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  std::map<std::string, size_t> home;
  for (int i = 0; i < 200; ++i) {
    std::string id = "job-" + std::to_string(i);
    REQUIRE(store->add("spread", id, "{}", in_ms(60000)).is_ok());
    home[id] = shard_order(store->addresses(), job_key("spread", id)).front();
  }
  int64_t on_one = record_count(one);
  int64_t on_two = record_count(two);
  CHECK(on_one > 50);
  CHECK(on_two > 50);
  CHECK(on_one + on_two == 200);
  for (const auto& [id, shard] : home) {
    CHECK(record_of(shard == 0 ? one : two, "spread:" + id).has_value());
  }

  two.stop();
  auto fresh = store_over({&one, &two});  // never connected to two
  // New jobs all land on one; those whose home is two are held for it.
  int held = 0;
  for (int i = 200; i < 240; ++i) {
    std::string id = "job-" + std::to_string(i);
    auto added = fresh->add("spread", id, "{}", in_ms(60000));
    bool homed_on_two = shard_order(store->addresses(), job_key("spread", id)).front() == 1;
    CHECK(answered_held(added) == homed_on_two);
    CHECK(added.is_ok() != homed_on_two);
    held += answered_held(added);
  }
  CHECK(held > 5);
  CHECK(record_count(one) == on_one + 40);
  CHECK(zcard(one, keys::held(two.shard().name())) == held);

  std::string on_two_id;
  for (const auto& [id, shard] : home) {
    if (shard == 1) {
      on_two_id = id;
    }
  }
  auto missing = fresh->get("spread", on_two_id);
  CHECK(missing.status().code() == Code::kUnavailable);
  CHECK(missing.status().message().find(two.address()) != std::string::npos);
  CHECK(fresh->del("spread", on_two_id).code() == Code::kUnavailable);
  CHECK(fresh->get("spread", "never-added").status().code() == Code::kUnavailable);
  CHECK(fresh->promote(1, 10).status().code() == Code::kUnavailable);

  restart(two);
  auto found = fresh->get("spread", on_two_id);
  REQUIRE(found.is_ok());
  CHECK(found->state == JobState::kDelayed);
  CHECK(fresh->get("spread", "never-added").status().code() == Code::kNotFound);
  for (int i = 0; i < 240; ++i) {
    CHECK(fresh->get("spread", "job-" + std::to_string(i)).is_ok());
  }
  // A retry of a job that went to one while two was down finds it there:
  // same body is existing, or still unknown while the copy is held (no
  // verifier ran); another body is a conflict.
  for (int i = 200; i < 240; ++i) {
    std::string id = "job-" + std::to_string(i);
    auto same = fresh->add("spread", id, "{}", kNow);
    CHECK((same.is_ok() ? same->existing : answered_held(same)));
    CHECK(fresh->add("spread", id, "{\"x\":1}", kNow).status().code() == Code::kConflict);
  }
  CHECK(record_count(two) == on_two);  // no copy was made on two
  check_consistent(one);
  check_consistent(two);
}

TEST_CASE(
    "a shard that died under an open connection: the add is unknown or placed, a retry is placed") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  std::string id = id_homed_on(*store, "t", 1, "k");
  REQUIRE(store->add("t", "warm", "{}", kNow).is_ok());
  REQUIRE(store->get("t", id).status().code() == Code::kNotFound);  // connected to both
  int64_t on_one = record_count(one);
  two.stop();
  // The open connection still looks reachable, so the add is sent to two and
  // finds it closed: that answers kUnknown (it may have run) instead of
  // falling over to one. Or it is held on one: kUnknown too. Retries place
  // exactly one held copy, and answer kUnknown until two is asked.
  auto added = store->add("t", id, "{}", in_ms(60000));
  INFO(added.status().message());
  CHECK(added.status().code() == Code::kUnknown);
  auto retry = store->add("t", id, "{}", in_ms(60000));
  CHECK(answered_held(retry));
  CHECK(record_of(one, "t:" + id).has_value());
  auto again = store->add("t", id, "{}", in_ms(60000));
  CHECK(answered_held(again));
  CHECK(record_count(one) == on_one + 1);
}

TEST_CASE("a new id whose home shard is down is held on the other until claim and settle") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  const std::string name_one = one.shard().name();
  const std::string name_two = two.shard().name();
  const std::vector<std::string> names = {name_one, name_two};
  std::string id = id_homed_on(*store, "t", 1, "fresh");
  std::string key = job_key("t", id);
  two.stop();

  auto added = store->add("t", id, "{\"v\":1}", in_ms(-1));  // due at once
  CHECK(answered_held(added));
  auto job = store->get("t", id);
  REQUIRE(job.is_ok());
  CHECK(job->state == JobState::kHeld);
  CHECK(std::string(state_name(job->state)) == "held");
  CHECK(zscore(one, keys::held(name_two), key) == job->due_at_ms);
  CHECK(delayed_count(one) == 0);
  CHECK(counts(one) == std::map<std::string, int64_t>{{"t:h", 1}});
  // Due, but held: promote leaves it; reserve cannot take it.
  CHECK(store->promote(0, 100)->moved == 0);
  CHECK(store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20)->jobs.empty());
  // A retry while two is still down is the same held job.
  auto retry = store->add("t", id, "{\"v\":1}", kNow);
  CHECK(answered_held(retry));
  CHECK(record_count(one) == 1);

  restart(two);
  auto copies = store->held_copies(0, name_two, 10);
  REQUIRE(copies.is_ok());
  REQUIRE(copies->size() == 1);
  CHECK((*copies)[0].key == key);
  CHECK((*copies)[0].incarnation == job->incarnation);
  auto claimed = store->shard(1).run(claim_call(key, name_one, (*copies)[0].created_ms));
  REQUIRE(claimed.is_ok());
  CHECK((*claimed)->integer == 0);  // two does not hold it
  CHECK(hget(two, keys::moved(), key) == name_one);
  auto settled = store->shard(0).run(settle_call(key, job->incarnation, "ok", name_two, names));
  REQUIRE(settled.is_ok());
  CHECK((*settled)->integer == 1);
  CHECK(store->get("t", id)->state == JobState::kDelayed);
  CHECK(zcard(one, keys::held(name_two)) == 0);
  CHECK(store->promote(0, 100)->moved == 1);
  check_consistent(one);

  // The marker on two: with one down, a new add of this id on two is held
  // until one is asked (one may still hold it).
  auto batch = store->reserve(0, "r2", {slot("t", 30000)}, 10, 1 << 20);
  REQUIRE(batch->jobs.size() == 1);
  one.stop();
  auto on_two = store_over({&one, &two})->add("t", id, "{\"v\":2}", kNow);
  CHECK(answered_held(on_two));
  CHECK(zscore(two, keys::held(name_one), key).has_value());
}

TEST_CASE("a re-add while the shard holding the id is down is held, then dropped as a duplicate") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  const std::string name_one = one.shard().name();
  const std::string name_two = two.shard().name();
  const std::vector<std::string> names = {name_one, name_two};
  std::string id = id_homed_on(*store, "t", 1, "dup");
  std::string key = job_key("t", id);
  REQUIRE(store->add("t", id, "{\"v\":1}", in_ms(60000)).is_ok());
  REQUIRE(record_of(two, key).has_value());
  two.stop();

  auto store2 = store_over({&one, &two});
  auto retry = store2->add("t", id, "{\"v\":1}", in_ms(60000));
  CHECK(answered_held(retry));  // one could not know
  CHECK(zscore(one, keys::held(name_two), key).has_value());
  // Only the held copy is reachable: delete must not pretend it worked.
  std::string before_one = one.dump_all();
  auto deleted = store2->del("t", id);
  CHECK(deleted.code() == Code::kUnavailable);
  CHECK(deleted.message().find(name_two) != std::string::npos);
  CHECK(one.dump_all() == before_one);

  restart(two);
  auto copies = store2->held_copies(0, name_two, 10);
  REQUIRE(copies.is_ok());
  REQUIRE(copies->size() == 1);
  auto claimed = store2->shard(1).run(claim_call(key, name_one, (*copies)[0].created_ms));
  REQUIRE(claimed.is_ok());
  CHECK((*claimed)->integer == 1);  // two holds it: one's copy is a duplicate
  CHECK_FALSE(hget(two, keys::moved(), key).has_value());
  auto settled =
      store2->shard(0).run(settle_call(key, (*copies)[0].incarnation, "dup", name_two, names));
  REQUIRE(settled.is_ok());
  CHECK((*settled)->integer == 2);
  CHECK(record_count(one) == 0);
  CHECK(hlen(one, keys::bodies()) == 0);
  CHECK(zcard(one, keys::held(name_two)) == 0);
  CHECK(counts(one).empty());
  CHECK(stat(one, "t:duplicate") == 1);
  CHECK(integer(one, {"TTL", stats_key()}) > 0);
  // The original on two is untouched.
  auto original = store2->get("t", id);
  REQUIRE(original.is_ok());
  CHECK(original->state == JobState::kDelayed);
  // A second settle of the same copy is a no-op.
  auto again =
      store2->shard(0).run(settle_call(key, (*copies)[0].incarnation, "dup", name_two, names));
  CHECK((*again)->integer == 0);
}

TEST_CASE("delete with a shard down: a verified copy is deleted with a tombstone") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  const std::string name_one = one.shard().name();
  const std::string name_two = two.shard().name();
  std::string id = id_homed_on(*store, "t", 0, "tomb");
  std::string key = job_key("t", id);
  REQUIRE(store->add("t", id, "{}", in_ms(60000)).is_ok());
  two.stop();
  auto store2 = store_over({&one, &two});
  CHECK(store2->del("t", id).is_ok());
  CHECK(record_count(one) == 0);
  CHECK(zscore(one, keys::tombs(), key).has_value());
  CHECK(store2->get("t", id).status().code() == Code::kUnavailable);  // two may hold it
  // A nonexistent id with a shard down: cannot say it is not there.
  CHECK(store2->del("t", "never").code() == Code::kUnavailable);

  // A copy two held of it (added while one was down) is a duplicate of the
  // deleted job: claim on one says so through the tombstone.
  restart(two);
  // A copy made before the delete (here: a creation time a second earlier).
  auto claimed = store2->shard(0).run(claim_call(key, name_two, dq::now_ms() - 1000));
  REQUIRE(claimed.is_ok());
  CHECK((*claimed)->integer == 1);
  // All shards up, nothing anywhere.
  CHECK(store2->del("t", id).code() == Code::kNotFound);
  CHECK(store2->del("t", "never").code() == Code::kNotFound);
}

TEST_CASE("deleting a held copy with every shard up leaves no tombstone") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  const std::string name_two = two.shard().name();
  std::string id = id_homed_on(*store, "t", 1, "heldel");
  std::string key = job_key("t", id);
  two.stop();
  REQUIRE(answered_held(store_over({&one, &two})->add("t", id, "{}", in_ms(60000))));
  restart(two);
  auto store2 = store_over({&one, &two});
  CHECK(store2->del("t", id).is_ok());
  CHECK(record_count(one) == 0);
  CHECK(zcard(one, keys::held(name_two)) == 0);
  CHECK(integer(one, {"EXISTS", keys::tombs()}) == 0);
  CHECK(counts(one).empty());
}

TEST_CASE("no shard reachable: add is unavailable and writes nothing") {
  TestRedis one;
  auto store = store_over({&one});
  one.stop();
  auto added = store->add("t", "1", "{}", kNow);
  CHECK(added.status().code() == Code::kUnavailable);
  CHECK(added.status().message().find("no Redis shard can take job t/1") == 0);
  restart(one);
  CHECK(store->get("t", "1").status().code() == Code::kNotFound);
  CHECK(store->add("t", "1", "{}", kNow).is_ok());
}

TEST_CASE("adding a third shard keeps every job reachable and makes no duplicate") {
  TestRedis one, two, three;
  std::vector<std::string> ids;
  {
    auto store = store_over({&one, &two});
    for (int i = 0; i < 150; ++i) {
      ids.push_back("k" + std::to_string(i));
      REQUIRE(store->add("grow", ids.back(), "{\"i\":" + std::to_string(i) + "}", in_ms(60000))
                  .is_ok());
    }
  }
  auto store = store_over({&one, &two, &three});
  int moved_home = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& id = ids[i];
    if (shard_order(store->addresses(), job_key("grow", id)).front() == 2) {
      moved_home++;
    }
    REQUIRE(store->get("grow", id).is_ok());
    CHECK(store->add("grow", id, "{}", kNow).status().code() == Code::kConflict);
    auto same = store->add("grow", id, "{\"i\":" + std::to_string(i) + "}", kNow);
    REQUIRE(same.is_ok());
    CHECK(same->existing);
  }
  CHECK(moved_home > 20);           // some homes did move to the new shard
  CHECK(record_count(three) == 0);  // no duplicate was made
  for (const auto& id : ids) {
    CHECK(store->del("grow", id).is_ok());
  }
  CHECK(record_count(one) == 0);
  CHECK(record_count(two) == 0);
  // New jobs do use the new shard.
  for (int i = 0; i < 60; ++i) {
    REQUIRE(store->add("grow", "new" + std::to_string(i), "{}", kNow).is_ok());
  }
  CHECK(record_count(three) > 5);
}

TEST_CASE("AUTH with a password") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "requirepass", "s3cret"});
  ShardAddress shard = redis.shard();
  BlockingJobStore no_password({shard}, 300, 1000);
  CHECK(no_password.add("t", "1", "{}", kNow).status().code() == Code::kInternal);
  shard.password = "wrong";
  BlockingJobStore wrong({shard}, 300, 1000);
  CHECK(wrong.add("t", "1", "{}", kNow).status().code() == Code::kUnavailable);
  shard.password = "s3cret";
  BlockingJobStore right({shard}, 300, 1000);
  CHECK(right.add("t", "1", "{}", kNow).is_ok());
  CHECK(right.get("t", "1").is_ok());
}

// ====================================================================== unknown outcome

TEST_CASE("a command that times out in a hung Redis is kUnknown: it may still run") {
  TestRedis redis;
  auto store = store_over({&redis}, 300);
  REQUIRE(store->add("t", "warm", "{}", kNow).is_ok());  // connected
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  REQUIRE(store->promote(0, 100)->moved == 2);

  kill(redis.pid(), SIGSTOP);
  int64_t start = monotonic_ms();
  auto added = store->add("t", "2", "{}", kNow);
  CHECK(added.status().code() == Code::kUnknown);
  CHECK(added.status().message().find("outcome unknown") != std::string::npos);
  CHECK(monotonic_ms() - start < 3000);
  auto reserved = store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20);
  CHECK_FALSE(reserved.is_ok());
  CHECK((reserved.status().code() == Code::kUnknown ||
         reserved.status().code() == Code::kUnavailable));
  kill(redis.pid(), SIGCONT);

  // Whether the reserve ran or not, release leaves both jobs ready with no
  // attempt counted, and the reserve id cannot take anything afterwards.
  auto released = store->release(0, "r1");
  REQUIRE(released.is_ok());
  CHECK(*released <= 2);
  sleep_ms(100);
  CHECK(store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20)->jobs.empty());
  for (const char* id : {"warm", "1"}) {
    auto job = store->get("t", id);
    REQUIRE(job.is_ok());
    CHECK(job->state == JobState::kReady);
    CHECK(job->attempts == 0);
  }
  check_consistent(redis);
}

// ====================================================================== known bugs

// A tombstone left on shard A by a delete while B was down condemns only the
// copies B took before the delete, not one B took after it (a new job): the
// two shards' clocks are compared with a slack of one second (claim.lua).
TEST_CASE("a job added after a delete is not dropped by the delete's tombstone") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  const std::string name_one = one.shard().name();
  const std::string name_two = two.shard().name();
  const std::vector<std::string> names = {name_one, name_two};
  std::string id = id_homed_on(*store, "t", 0, "late");
  std::string key = job_key("t", id);
  REQUIRE(store->add("t", id, "{\"v\":1}", in_ms(60000)).is_ok());

  two.stop();
  REQUIRE(store_over({&one, &two})->del("t", id).is_ok());  // tombstone on one
  REQUIRE(zscore(one, keys::tombs(), key).has_value());
  restart(two);
  one.stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // past the clock slack
  auto added = store_over({&one, &two})->add("t", id, "{\"v\":2}", in_ms(60000));
  CHECK(answered_held(added));  // kept; the producer learns the outcome by retrying
  restart(one);

  // What the timer's HeldVerifier does for two's held copy.
  auto verifier = store_over({&one, &two});
  auto copies = verifier->held_copies(1, name_one, 10);
  REQUIRE(copies.is_ok());
  REQUIRE(copies->size() == 1);
  auto claimed = verifier->shard(0).run(claim_call(key, name_two, (*copies)[0].created_ms));
  REQUIRE(claimed.is_ok());
  std::string verdict = (*claimed)->integer == 1 ? "dup" : "ok";
  REQUIRE(verifier->shard(1)
              .run(settle_call(key, (*copies)[0].incarnation, verdict, name_one, names))
              .is_ok());
  auto job = verifier->get("t", id);
  REQUIRE(job.is_ok());  // the later job is kept
  CHECK(job->body == "{\"v\":2}");
}

// JobStore against real redis-server instances: every transition of a job,
// the dead-letter set, stats counters, wake lists, and shards that go down
// or are added.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <set>

#include "common/clock.h"
#include "common/job_store.h"
#include "common/keys.h"
#include "tests/support/redis_server.h"

using namespace dq;
using dq::test::TestRedis;

namespace {

std::unique_ptr<JobStore> store_over(const std::vector<TestRedis*>& servers) {
  std::vector<ShardAddress> shards;
  for (TestRedis* server : servers) shards.push_back(server->shard());
  return std::make_unique<JobStore>(shards, 300, 2000);
}

int64_t stat(TestRedis& redis, const std::string& field) {
  auto reply = redis.command({"HGET", keys::stats(day_of(now_ms())), field});
  if (reply->type == REDIS_REPLY_NIL) return 0;
  return std::stoll(std::string(reply->str, reply->len));
}

int64_t list_length(TestRedis& redis, const std::string& key) {
  return redis.command({"LLEN", key})->integer;
}

// Reserve the one job the test made ready.
ReservedJob reserve_one(JobStore& store, const std::string& topic, int64_t lease_ms) {
  auto promoted = store.promote(0, now_ms(), 100);
  REQUIRE(promoted.is_ok());
  auto reserved = store.reserve(0, now_ms(), {{topic, lease_ms, 10}});
  REQUIRE(reserved.is_ok());
  REQUIRE(reserved->size() == 1);
  return reserved->front();
}

}  // namespace

TEST_CASE("harness: stop and restart keep the data, binary-safe commands") {
  TestRedis redis;
  redis.command({"SET", "k", std::string("a\0b", 3)});
  std::string before = redis.dump_all();
  CHECK(before.find("k (string)") != std::string::npos);
  redis.stop();
  CHECK_FALSE(redis.running());
  redis.start();
  CHECK(redis.running());
  CHECK(redis.dump_all() == before);
  auto got = redis.command({"GET", "k"});
  CHECK(std::string(got->str, got->len) == std::string("a\0b", 3));
}

TEST_CASE("add, get, del round trip") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t due = now_ms() + 60000;
  std::string body = "{\"n\":1,\"text\":\"a|b|c\"}";
  auto added = store->add("orders", "42", body, due);
  REQUIRE(added.is_ok());
  CHECK(*added == 0);

  auto job = store->get("orders", "42");
  REQUIRE(job.is_ok());
  CHECK(job->topic == "orders");
  CHECK(job->id == "42");
  CHECK(job->body == body);
  CHECK(job->state == JobState::kDelayed);
  CHECK(job->attempts == 0);
  CHECK(job->due_at_ms == due);
  CHECK(job->created_at_ms <= now_ms());
  CHECK(job->created_at_ms > now_ms() - 10000);
  CHECK(job->last_error.empty());

  CHECK(store->get("orders", "43").status().code() == Code::kNotFound);
  CHECK(store->del("orders", "42").is_ok());
  CHECK(store->get("orders", "42").status().code() == Code::kNotFound);
  CHECK(store->del("orders", "42").code() == Code::kNotFound);
  CHECK(redis.command({"ZCARD", keys::delayed()})->integer == 0);
  CHECK(redis.command({"EXISTS", keys::jobs()})->integer == 0);
}

TEST_CASE("a duplicate add is a conflict and changes nothing") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("orders", "42", "{\"v\":1}", now_ms() + 60000).is_ok());
  std::string before = redis.dump_all();
  auto again = store->add("orders", "42", "{\"v\":2}", now_ms() + 1000);
  CHECK(again.status().code() == Code::kConflict);
  CHECK(again.status().message() == "job orders/42 is already pending (delayed)");
  CHECK(redis.dump_all() == before);
  CHECK(store->get("orders", "42")->body == "{\"v\":1}");
  // Same id in another topic is another job.
  CHECK(store->add("payments", "42", "{}", now_ms()).is_ok());
}

TEST_CASE("the scripts are loaded again after SCRIPT FLUSH (NOSCRIPT fallback)") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", now_ms()).is_ok());
  redis.command({"SCRIPT", "FLUSH"});
  CHECK(store->add("t", "2", "{}", now_ms()).is_ok());
  CHECK(store->get("t", "2").is_ok());
}

TEST_CASE("promote moves only due jobs and tells the next due time") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t now = now_ms();
  REQUIRE(store->add("t", "past", "{}", now - 1000).is_ok());
  REQUIRE(store->add("t", "now", "{}", now).is_ok());
  REQUIRE(store->add("t", "later", "{}", now + 50000).is_ok());
  REQUIRE(store->add("t", "latest", "{}", now + 90000).is_ok());

  auto promoted = store->promote(0, now, 100);
  REQUIRE(promoted.is_ok());
  CHECK(promoted->moved == 2);
  REQUIRE(promoted->next_due_ms.has_value());
  CHECK(*promoted->next_due_ms == now + 50000);
  CHECK(store->get("t", "past")->state == JobState::kReady);
  CHECK(store->get("t", "now")->state == JobState::kReady);
  CHECK(store->get("t", "later")->state == JobState::kDelayed);
  CHECK(list_length(redis, keys::ready("t")) == 2);

  // The limit caps a batch.
  auto rest = store->promote(0, now + 100000, 1);
  REQUIRE(rest.is_ok());
  CHECK(rest->moved == 1);
  CHECK(*rest->next_due_ms == now + 90000);
  auto last = store->promote(0, now + 100000, 1);
  CHECK(last->moved == 1);
  CHECK_FALSE(last->next_due_ms.has_value());
  CHECK(store->promote(0, now + 100000, 1)->moved == 0);
}

TEST_CASE("reserve takes topics in order, at most `most` each, and leases them") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t now = now_ms();
  for (int i = 0; i < 3; ++i)
    REQUIRE(store->add("a", "a" + std::to_string(i), "{\"a\":1}", now - 10 + i).is_ok());
  for (int i = 0; i < 3; ++i)
    REQUIRE(store->add("b", "b" + std::to_string(i), "{}", now - 10 + i).is_ok());
  REQUIRE(store->promote(0, now, 100)->moved == 6);

  auto reserved = store->reserve(0, now, {{"b", 30000, 2}, {"a", 10000, 1}, {"none", 1000, 5}});
  REQUIRE(reserved.is_ok());
  REQUIRE(reserved->size() == 3);
  CHECK((*reserved)[0].job.topic == "b");
  CHECK((*reserved)[0].job.id == "b0");
  CHECK((*reserved)[1].job.id == "b1");
  CHECK((*reserved)[2].job.topic == "a");
  CHECK((*reserved)[2].job.id == "a0");
  CHECK((*reserved)[2].job.body == "{\"a\":1}");
  CHECK((*reserved)[2].job.due_at_ms == now - 10);
  for (const auto& job : *reserved) {
    CHECK(job.shard == 0);
    CHECK(job.job.attempts == 1);
    CHECK(job.job.state == JobState::kWorking);
    auto stored = store->get(job.job.topic, job.job.id);
    CHECK(stored->state == JobState::kWorking);
    CHECK(stored->attempts == 1);
  }
  // Lease deadlines: now + the topic's lease.
  CHECK(std::string(redis.command({"ZSCORE", keys::working(), "b:b0"})->str) ==
        std::to_string(now + 30000));
  CHECK(std::string(redis.command({"ZSCORE", keys::working(), "a:a0"})->str) ==
        std::to_string(now + 10000));
  CHECK(list_length(redis, keys::ready("a")) == 2);
  CHECK(list_length(redis, keys::ready("b")) == 1);
  CHECK(store->reserve(0, now, {})->empty());
}

TEST_CASE("ack removes the job") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", now_ms() - 1).is_ok());
  ReservedJob job = reserve_one(*store, "t", 30000);
  CHECK(store->ack(0, "t", "1").is_ok());
  CHECK(store->get("t", "1").status().code() == Code::kNotFound);
  CHECK(redis.command({"ZCARD", keys::working()})->integer == 0);
  CHECK(store->ack(0, "t", "1").code() == Code::kNotFound);
  CHECK(stat(redis, "t:delivered") == 1);
}

TEST_CASE("ack_all acks many jobs in one round trip, even after SCRIPT FLUSH") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (const char* id : {"a", "b", "c"}) REQUIRE(store->add("t", id, "{}", now_ms() - 1).is_ok());
  REQUIRE(store->promote(0, now_ms(), 100).is_ok());
  auto reserved = store->reserve(0, now_ms(), {{"t", 30000, 10}});
  REQUIRE(reserved.is_ok());
  REQUIRE(reserved->size() == 3);
  redis.command({"SCRIPT", "FLUSH"});  // the pipelined EVALSHAs answer NOSCRIPT
  std::vector<Status> acked =
      store->ack_all(0, {{"t", "a"}, {"t", "b"}, {"t", "gone"}, {"t", "c"}});
  REQUIRE(acked.size() == 4);
  CHECK(acked[0].is_ok());
  CHECK(acked[1].is_ok());
  CHECK(acked[2].code() == Code::kNotFound);
  CHECK(acked[3].is_ok());
  CHECK(redis.command({"HLEN", keys::jobs()})->integer == 0);
  CHECK(redis.command({"ZCARD", keys::working()})->integer == 0);
  CHECK(stat(redis, "t:delivered") == 3);

  redis.stop();
  std::vector<Status> down = store->ack_all(0, {{"t", "x"}, {"t", "y"}});
  REQUIRE(down.size() == 2);
  CHECK(down[0].code() == Code::kUnavailable);
  CHECK(down[1].code() == Code::kUnavailable);
}

TEST_CASE("fail retries with the delay, then dead-letters; requeue and purge") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{\"x\":1}", now_ms() - 1).is_ok());

  ReservedJob first = reserve_one(*store, "t", 30000);
  CHECK(first.job.attempts == 1);
  int64_t before = now_ms();
  auto outcome = store->fail(0, "t", "1", 1, 60000, 2, "HTTP 500");
  REQUIRE(outcome.is_ok());
  CHECK(*outcome == FailOutcome::kRescheduled);
  auto retrying = store->get("t", "1");
  REQUIRE(retrying.is_ok());
  CHECK(retrying->state == JobState::kRetrying);
  CHECK(retrying->attempts == 1);
  CHECK(retrying->due_at_ms >= before + 60000);
  CHECK(retrying->due_at_ms <= now_ms() + 60000);
  CHECK(retrying->last_error == "HTTP 500");
  CHECK(retrying->last_error_at_ms >= before);
  CHECK(redis.command({"ZCARD", keys::working()})->integer == 0);
  // Not due yet: promote leaves it.
  CHECK(store->promote(0, now_ms(), 100)->moved == 0);

  auto promoted = store->promote(0, retrying->due_at_ms, 100);
  CHECK(promoted->moved == 1);
  auto second = store->reserve(0, now_ms(), {{"t", 30000, 10}});
  REQUIRE(second->size() == 1);
  CHECK((*second)[0].job.attempts == 2);
  CHECK(*store->fail(0, "t", "1", 2, 60000, 2, "timeout after 5000 ms") == FailOutcome::kDead);

  auto dead = store->get("t", "1");
  CHECK(dead->state == JobState::kDead);
  CHECK(dead->last_error == "timeout after 5000 ms");
  CHECK(*store->dead_count("t") == 1);
  auto listed = store->dead_list("t", 0, 10);
  REQUIRE(listed.is_ok());
  REQUIRE(listed->size() == 1);
  CHECK((*listed)[0].job.id == "1");
  CHECK((*listed)[0].job.topic == "t");
  CHECK((*listed)[0].job.state == JobState::kDead);
  CHECK((*listed)[0].job.body == "{\"x\":1}");
  CHECK((*listed)[0].job.last_error == "timeout after 5000 ms");
  CHECK(stat(redis, "t:failed") == 1);
  CHECK(stat(redis, "t:dead") == 1);

  auto re_add = store->add("t", "1", "{}", now_ms());
  CHECK(re_add.status().code() == Code::kConflict);
  CHECK(re_add.status().message() ==
        "job t/1 is in the dead-letter set; requeue or purge it first");

  int64_t requeue_time = now_ms();
  CHECK(*store->dead_requeue("t", "1") == 1);
  auto back = store->get("t", "1");
  CHECK(back->state == JobState::kDelayed);
  CHECK(back->attempts == 0);
  CHECK(back->due_at_ms >= requeue_time);
  CHECK(back->due_at_ms <= now_ms());
  CHECK(back->last_error.empty());
  CHECK(*store->dead_count("t") == 0);
  CHECK(store->dead_requeue("t", "1").status().code() == Code::kNotFound);

  // Kill it again, plus a second one, and purge both.
  REQUIRE(store->add("t", "2", "{}", now_ms() - 1).is_ok());
  REQUIRE(store->promote(0, now_ms(), 100)->moved == 2);
  auto both = store->reserve(0, now_ms(), {{"t", 30000, 10}});
  REQUIRE(both->size() == 2);
  for (const auto& job : *both)
    CHECK(*store->fail(0, "t", job.job.id, 1, 1000, 1, "gone") == FailOutcome::kDead);
  CHECK(*store->dead_count("t") == 2);
  CHECK(*store->dead_purge("t") == 2);
  CHECK(*store->dead_count("t") == 0);
  CHECK(store->get("t", "1").status().code() == Code::kNotFound);
  CHECK(store->get("t", "2").status().code() == Code::kNotFound);
  CHECK(redis.command({"HLEN", keys::errors()})->integer == 0);
}

TEST_CASE("dead_requeue of all and dead_list paging over shards") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  std::map<size_t, int> per_shard;
  for (int i = 0; i < 20; ++i) {
    auto added = store->add("t", std::to_string(i), "{}", now_ms() - 1);
    REQUIRE(added.is_ok());
    per_shard[*added]++;
  }
  for (size_t shard = 0; shard < 2; ++shard) {
    REQUIRE(store->promote(shard, now_ms(), 100).is_ok());
    auto jobs = store->reserve(shard, now_ms(), {{"t", 30000, 100}});
    REQUIRE(jobs.is_ok());
    CHECK(static_cast<int>(jobs->size()) == per_shard[shard]);
    for (const auto& job : *jobs) {
      REQUIRE(*store->fail(shard, "t", job.job.id, 1, 1000, 1, "e" + job.job.id) ==
              FailOutcome::kDead);
    }
  }
  CHECK(*store->dead_count("t") == 20);
  std::set<std::string> seen;
  for (size_t offset = 0; offset < 20; offset += 7) {
    auto page = store->dead_list("t", offset, 7);
    REQUIRE(page.is_ok());
    CHECK(page->size() == std::min<size_t>(7, 20 - offset));
    for (const auto& dead : *page) {
      CHECK(dead.job.last_error == "e" + dead.job.id);
      seen.insert(dead.job.id);
    }
  }
  CHECK(seen.size() == 20);
  CHECK(store->dead_list("t", 20, 5)->empty());
  CHECK(*store->dead_requeue("t", "") == 20);
  CHECK(*store->dead_count("t") == 0);
  CHECK(store->get("t", "7")->state == JobState::kDelayed);
  CHECK(stat(one, "t:requeued") + stat(two, "t:requeued") == 20);
}

TEST_CASE("requeue_expired returns a job whose lease ran out") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", now_ms() - 1).is_ok());
  ReservedJob job = reserve_one(*store, "t", 5000);
  int64_t now = now_ms();
  CHECK(*store->requeue_expired(0, now, 100) == 0);  // lease still running
  CHECK(store->get("t", "1")->state == JobState::kWorking);
  CHECK(*store->requeue_expired(0, now + 6000, 100) == 1);
  auto requeued = store->get("t", "1");
  CHECK(requeued->state == JobState::kReady);
  CHECK(requeued->attempts == 1);  // the lost attempt still counts
  CHECK(redis.command({"ZCARD", keys::working()})->integer == 0);
  auto again = store->reserve(0, now_ms(), {{"t", 5000, 10}});
  REQUIRE(again->size() == 1);
  CHECK((*again)[0].job.attempts == 2);
  CHECK(stat(redis, "t:expired") == 1);
}

TEST_CASE("a stale fail changes nothing") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", now_ms() - 1).is_ok());
  ReservedJob job = reserve_one(*store, "t", 30000);
  std::string before = redis.dump_all();
  CHECK(*store->fail(0, "t", "1", 2, 1000, 5, "late") == FailOutcome::kStale);
  CHECK(*store->fail(0, "t", "nope", 1, 1000, 5, "late") == FailOutcome::kStale);
  CHECK(redis.dump_all() == before);
  // Requeued after its lease ran out: the old holder's fail is stale too.
  REQUIRE(*store->requeue_expired(0, now_ms() + 60000, 100) == 1);
  before = redis.dump_all();
  CHECK(*store->fail(0, "t", "1", 1, 1000, 5, "late") == FailOutcome::kStale);
  CHECK(redis.dump_all() == before);
}

TEST_CASE("stats counters of the day") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (int i = 0; i < 4; ++i)
    REQUIRE(store->add("s", std::to_string(i), "{}", now_ms() - 1).is_ok());
  CHECK(stat(redis, "s:added") == 4);
  CHECK(store->del("s", "3").is_ok());
  CHECK(stat(redis, "s:deleted") == 1);
  REQUIRE(store->promote(0, now_ms(), 100)->moved == 3);
  auto jobs = store->reserve(0, now_ms(), {{"s", 30000, 10}});
  REQUIRE(jobs->size() == 3);
  CHECK(store->ack(0, "s", "0").is_ok());
  CHECK(*store->fail(0, "s", "1", 1, 1000, 5, "x") == FailOutcome::kRescheduled);
  CHECK(*store->fail(0, "s", "2", 1, 1000, 1, "x") == FailOutcome::kDead);
  CHECK(stat(redis, "s:delivered") == 1);
  CHECK(stat(redis, "s:failed") == 1);
  CHECK(stat(redis, "s:dead") == 1);
  CHECK(stat(redis, "s:added") == 4);
  CHECK(redis.command({"TTL", keys::stats(day_of(now_ms()))})->integer > 86400);
}

TEST_CASE("wake lists get tokens and BLPOP waits for them") {
  TestRedis redis;
  auto store = store_over({&redis});
  // Nothing there: the wait times out after about the time asked.
  int64_t start = monotonic_ms();
  auto none = store->wait_consumer_wake(0, 250);
  REQUIRE(none.is_ok());
  CHECK_FALSE(*none);
  CHECK(monotonic_ms() - start >= 200);
  CHECK(monotonic_ms() - start < 2000);

  // An add that is due before everything known wakes the timer.
  REQUIRE(store->add("t", "1", "{}", now_ms() + 5000).is_ok());
  CHECK(list_length(redis, keys::timer_wake()) == 1);
  REQUIRE(store->add("t", "2", "{}", now_ms() + 9000).is_ok());  // later: no token
  CHECK(list_length(redis, keys::timer_wake()) == 1);
  REQUIRE(store->add("t", "3", "{}", now_ms() - 1).is_ok());
  CHECK(list_length(redis, keys::timer_wake()) == 2);
  CHECK(*store->wait_timer_wake(0, 100));
  CHECK(*store->wait_timer_wake(0, 0));
  CHECK_FALSE(*store->wait_timer_wake(0, 0));

  // Promote wakes consumers, one token per job moved.
  CHECK(store->promote(0, now_ms() + 10000, 100)->moved == 3);
  CHECK(list_length(redis, keys::consumer_wake()) == 3);
  start = monotonic_ms();
  CHECK(*store->wait_consumer_wake(0, 1000));
  CHECK(monotonic_ms() - start < 500);
}

TEST_CASE("two shards: spread, one down, back up") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  std::map<std::string, size_t> home;
  int count[2] = {0, 0};
  for (int i = 0; i < 200; ++i) {
    std::string id = "job-" + std::to_string(i);
    auto added = store->add("spread", id, "{}", now_ms() + 60000);
    REQUIRE(added.is_ok());
    home[id] = *added;
    count[*added]++;
  }
  CHECK(count[0] > 50);
  CHECK(count[1] > 50);
  CHECK(one.command({"HLEN", keys::jobs()})->integer == count[0]);
  CHECK(two.command({"HLEN", keys::jobs()})->integer == count[1]);

  two.stop();
  // Jobs whose home is the stopped shard land on the other one.
  int on_one = 0;
  for (int i = 200; i < 240; ++i) {
    auto added = store->add("spread", "job-" + std::to_string(i), "{}", now_ms() + 60000);
    REQUIRE(added.is_ok());
    CHECK(*added == 0);
    on_one++;
  }
  CHECK(on_one == 40);
  std::string on_two;
  for (const auto& entry : home) {
    if (entry.second == 1) on_two = entry.first;
  }
  REQUIRE_FALSE(on_two.empty());
  auto missing = store->get("spread", on_two);
  CHECK(missing.status().code() == Code::kUnavailable);
  CHECK(missing.status().message().find(two.address()) != std::string::npos);
  CHECK(store->del("spread", on_two).code() == Code::kUnavailable);
  CHECK(store->get("spread", "never-added").status().code() == Code::kUnavailable);
  CHECK(store->promote(1, now_ms(), 10).status().code() == Code::kUnavailable);

  two.start();
  auto found = store->get("spread", on_two);
  REQUIRE(found.is_ok());
  CHECK(found->state == JobState::kDelayed);
  CHECK(store->get("spread", "never-added").status().code() == Code::kNotFound);
  // Every job is reachable, including those added while two was down.
  for (int i = 0; i < 240; ++i) CHECK(store->get("spread", "job-" + std::to_string(i)).is_ok());
  // A job that went to its fallback while its home was down is still a
  // conflict now that the home is back.
  int conflicts = 0;
  for (int i = 200; i < 240; ++i) {
    auto again = store->add("spread", "job-" + std::to_string(i), "{}", now_ms());
    CHECK(again.status().code() == Code::kConflict);
    conflicts += again.status().code() == Code::kConflict;
  }
  CHECK(conflicts == 40);
  CHECK(two.command({"HLEN", keys::jobs()})->integer == count[1]);
}

TEST_CASE("no shard reachable: add is unavailable") {
  TestRedis one;
  auto store = store_over({&one});
  one.stop();
  auto added = store->add("t", "1", "{}", now_ms());
  CHECK(added.status().code() == Code::kUnavailable);
  CHECK(added.status().message().find("no Redis shard can take the job") == 0);
  one.start();
  CHECK(store->add("t", "1", "{}", now_ms()).is_ok());
}

TEST_CASE("adding a third shard keeps every job reachable") {
  TestRedis one, two, three;
  std::vector<std::string> ids;
  {
    auto store = store_over({&one, &two});
    for (int i = 0; i < 150; ++i) {
      ids.push_back("k" + std::to_string(i));
      REQUIRE(store->add("grow", ids.back(), "{\"i\":" + std::to_string(i) + "}", now_ms() + 60000)
                  .is_ok());
    }
  }
  auto store = store_over({&one, &two, &three});
  int moved_home = 0;
  for (const auto& id : ids) {
    std::vector<ShardAddress> shards = {one.shard(), two.shard(), three.shard()};
    if (shard_order(shards, job_key("grow", id)).front() == 2) moved_home++;
    auto job = store->get("grow", id);
    REQUIRE(job.is_ok());
    auto again = store->add("grow", id, "{}", now_ms());
    CHECK(again.status().code() == Code::kConflict);
  }
  CHECK(moved_home > 20);  // some homes did move to the new shard
  CHECK(three.command({"EXISTS", keys::jobs()})->integer == 0);  // no duplicate was made
  for (const auto& id : ids) CHECK(store->del("grow", id).is_ok());
  CHECK(one.command({"EXISTS", keys::jobs()})->integer == 0);
  CHECK(two.command({"EXISTS", keys::jobs()})->integer == 0);
  // New jobs do use the new shard.
  int on_three = 0;
  for (int i = 0; i < 60; ++i)
    on_three += *store->add("grow", "new" + std::to_string(i), "{}", now_ms()) == 2;
  CHECK(on_three > 5);
}

TEST_CASE("AUTH with a password") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "requirepass", "s3cret"});
  ShardAddress shard = redis.shard();
  JobStore no_password({shard}, 300, 1000);
  CHECK(no_password.add("t", "1", "{}", now_ms()).status().code() == Code::kInternal);
  shard.password = "wrong";
  JobStore wrong({shard}, 300, 1000);
  CHECK(wrong.add("t", "1", "{}", now_ms()).status().code() == Code::kUnavailable);
  shard.password = "s3cret";
  JobStore right({shard}, 300, 1000);
  CHECK(right.add("t", "1", "{}", now_ms()).is_ok());
  CHECK(right.get("t", "1").is_ok());
}

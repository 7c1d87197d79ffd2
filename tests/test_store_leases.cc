// The consumer's calls through BlockingJobStore (AsyncJobStore underneath):
// reserve's shares, caps and budgets, exact leases, acks (one or many in a
// call), incarnations and release.
#include <doctest/doctest.h>
#include <signal.h>

#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

// ====================================================================== reserve

TEST_CASE("reserve: shares first, then caps, within the job budget; leases each job") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t now = redis_time_ms(redis);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(store->add("a", "a" + std::to_string(i), "{\"a\":1}", at_ms(now - 100 + i)).is_ok());
    REQUIRE(store->add("b", "b" + std::to_string(i), "{}", at_ms(now - 100 + i)).is_ok());
  }
  REQUIRE(store->promote(0, 100)->moved == 10);

  int64_t before = redis_time_ms(redis);
  auto batch = store->reserve(
      0, "r1", {slot("a", 10000, 2, 3, 4), slot("b", 30000, 1, 5, 4), slot("none", 1000, 5, 5)}, 6,
      1 << 20);
  int64_t after = redis_time_ms(redis);
  REQUIRE(batch.is_ok());
  std::vector<std::string> taken;
  for (const auto& job : batch->jobs) {
    taken.push_back(job.job.id);
  }
  // Pass 1: a's share (2), b's share (1); pass 2: a up to its cap (3), then b.
  CHECK(taken == std::vector<std::string>{"a0", "a1", "b0", "a2", "b1", "b2"});
  CHECK(batch->ready_left == 4);
  const ReservedJob& a0 = batch->jobs[0];
  CHECK(a0.job.topic == "a");
  CHECK(a0.job.body == "{\"a\":1}");
  // An at in the past is due at Redis's now when it was added.
  CHECK(a0.job.due_at_ms >= now);
  CHECK(a0.job.due_at_ms <= before);
  CHECK(a0.job.created_at_ms >= now);
  for (const auto& job : batch->jobs) {
    CHECK(job.shard == 0);
    CHECK(job.job.attempts == 1);
    CHECK(job.job.state == JobState::kWorking);
    CHECK(job.lease.reserve_id == "r1");
    CHECK(job.lease.incarnation == job.job.incarnation);
    auto stored = store->get(job.job.topic, job.job.id);
    CHECK(stored->state == JobState::kWorking);
    CHECK(stored->attempts == 1);
    CHECK(stored->incarnation == job.job.incarnation);
  }
  auto a_deadline = zscore(redis, keys::working(), "a:a0");
  auto b_deadline = zscore(redis, keys::working(), "b:b0");
  CHECK(*a_deadline >= before + 10000);
  CHECK(*a_deadline <= after + 10000);
  CHECK(*b_deadline >= before + 30000);
  CHECK(*b_deadline <= after + 30000);
  // The lease list of the reserve id names its jobs and outlives the longest lease.
  CHECK(llen(redis, keys::lease("r1")) == 6);
  CHECK(integer(redis, {"PTTL", keys::lease("r1")}) > 30000);
  CHECK(llen(redis, keys::ready("a")) == 2);
  CHECK(llen(redis, keys::ready("b")) == 2);
  CHECK(counts(redis) ==
        std::map<std::string, int64_t>{{"a:r", 2}, {"a:w", 3}, {"b:r", 2}, {"b:w", 3}});
  check_consistent(redis);

  auto none = store->reserve(0, "r2", {}, 10, 1 << 20);
  REQUIRE(none.is_ok());
  CHECK(none->jobs.empty());
}

TEST_CASE("reserve stops once the bodies exceed the byte budget") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (int i = 0; i < 6; ++i) {
    REQUIRE(store->add("t", std::to_string(i), "0123456789", in_ms(-10 + i)).is_ok());
  }
  REQUIRE(store->promote(0, 100)->moved == 6);
  auto batch = store->reserve(0, "r1", {slot("t", 30000)}, 100, 25);
  REQUIRE(batch.is_ok());
  CHECK(batch->jobs.size() == 3);  // 10, 20, 30 bytes: the third crosses 25
  CHECK(batch->ready_left == 3);
  // A body larger than the budget still goes out alone.
  auto big = store->reserve(0, "r2", {slot("t", 30000)}, 100, 1);
  REQUIRE(big.is_ok());
  CHECK(big->jobs.size() == 1);
  // The jobs popped past the budget went back to the front, in their order.
  auto rest = store->reserve(0, "r3", {slot("t", 30000)}, 100, 1 << 20);
  REQUIRE(rest.is_ok());
  std::vector<std::string> taken;
  for (const auto& job : rest->jobs) {
    taken.push_back(job.job.id);
  }
  CHECK(taken == std::vector<std::string>{"4", "5"});
  CHECK(counts(redis) == std::map<std::string, int64_t>{{"t:w", 6}});
  check_consistent(redis);
}

TEST_CASE("reserve drops stale ready entries and never leases one job twice") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (const char* id : {"a", "b"}) {
    REQUIRE(store->add("t", id, "{}", kNow).is_ok());
  }
  REQUIRE(store->promote(0, 100)->moved == 2);
  // A second entry of a and one of a job that does not exist.
  redis.command({"RPUSH", keys::ready("t"), "t:a", "t:nothing"});
  auto batch = store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20);
  REQUIRE(batch.is_ok());
  std::vector<std::string> taken;
  for (const auto& job : batch->jobs) {
    taken.push_back(job.job.id);
  }
  CHECK(taken == std::vector<std::string>{"a", "b"});
  CHECK(batch->ready_left == 0);
  CHECK(llen(redis, keys::lease("r1")) == 2);
  check_consistent(redis);
}

// ====================================================================== ack

TEST_CASE("ack under the lease removes the job; a second ack finds it gone") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  ReservedJob job = reserve_one(*store, "t", 30000, "r1");
  auto acked = ack(*store, 0, "t", "1", job.lease);
  REQUIRE(acked.is_ok());
  CHECK(*acked == AckOutcome::kAcked);
  CHECK(store->get("t", "1").status().code() == Code::kNotFound);
  CHECK(leased_count(redis) == 0);
  CHECK(hlen(redis, keys::bodies()) == 0);
  CHECK(counts(redis).empty());
  CHECK(*ack(*store, 0, "t", "1", job.lease) == AckOutcome::kGone);
  CHECK(stat(redis, "t:delivered") == 1);
}

TEST_CASE("the working set is a skiplist from its first lease on, and its anchor is never a job") {
  TestRedis redis;
  auto store = store_over({&redis});
  // A working set that is a listpack already (written by an older dq) turns
  // into a skiplist with the first reserve.
  REQUIRE(redis.command({"ZADD", keys::working(), "9999999999999", "old:x"})->integer == 1);
  REQUIRE(text(redis.command({"OBJECT", "ENCODING", keys::working()}).get()) == "listpack");
  REQUIRE(redis.command({"DEL", keys::working()})->integer == 1);
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  REQUIRE(store->add("t", "2", "{}", kNow).is_ok());
  ReservedJob job = reserve_one(*store, "t", 50, "r1");
  CHECK(text(redis.command({"OBJECT", "ENCODING", keys::working()}).get()) == "skiplist");
  CHECK(leased_count(redis) == 1);
  REQUIRE(*ack(*store, 0, "t", job.job.id, job.lease) == AckOutcome::kAcked);
  // Every lease is gone; the set stays, a skiplist, holding only the anchor.
  CHECK(leased_count(redis) == 0);
  CHECK(integer(redis, {"ZCARD", keys::working()}) == 1);
  CHECK(text(redis.command({"OBJECT", "ENCODING", keys::working()}).get()) == "skiplist");
  // Lease expiry never takes the anchor, however late it is.
  ReservedJob other = reserve_one(*store, "t", 50, "r2");
  sleep_ms(100);
  auto expired = store->requeue_expired(0, 100);
  REQUIRE(expired.is_ok());
  CHECK(expired->requeued == 1);
  CHECK(store->get("t", other.job.id)->state == JobState::kReady);
  CHECK(integer(redis, {"ZCARD", keys::working()}) == 1);
  check_consistent(redis);
}

TEST_CASE("ack_all acks many jobs in one round trip, even after FUNCTION FLUSH") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (const char* id : {"a", "b", "c"}) {
    REQUIRE(store->add("t", id, "{}", kNow).is_ok());
  }
  REQUIRE(store->promote(0, 100).is_ok());
  auto batch = store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20);
  REQUIRE(batch.is_ok());
  REQUIRE(batch->jobs.size() == 3);
  std::map<std::string, Lease> leases;
  for (const auto& job : batch->jobs) {
    leases[job.job.id] = job.lease;
  }
  redis.command({"FUNCTION", "FLUSH"});  // the pipelined FCALLs answer "not found"
  auto acked = store->ack_all(0, {{"t", "a", leases["a"]},
                                  {"t", "b", leases["b"]},
                                  {"t", "gone", leases["a"]},
                                  {"t", "c", leases["c"]}});
  REQUIRE(acked.size() == 4);
  CHECK(*acked[0] == AckOutcome::kAcked);
  CHECK(*acked[1] == AckOutcome::kAcked);
  CHECK(*acked[2] == AckOutcome::kGone);
  CHECK(*acked[3] == AckOutcome::kAcked);
  CHECK(record_count(redis) == 0);
  CHECK(leased_count(redis) == 0);
  CHECK(stat(redis, "t:delivered") == 3);

  redis.stop();
  // The open connection learns Redis is gone only once the commands are sent.
  auto down = store->ack_all(0, {{"t", "x", leases["a"]}, {"t", "y", leases["a"]}});
  REQUIRE(down.size() == 2);
  for (const auto& outcome : down) {
    CHECK_FALSE(outcome.is_ok());
    CHECK((outcome.status().code() == Code::kUnknown ||
           outcome.status().code() == Code::kUnavailable));
  }
  // Then nothing can be sent at all.
  auto again = store->ack_all(0, {{"t", "x", leases["a"]}});
  REQUIRE(again.size() == 1);
  CHECK(again[0].status().code() == Code::kUnavailable);
}

TEST_CASE("one ack call: counters per topic, a job acked twice is gone the second time") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (const char* topic : {"p", "q"}) {
    for (const char* id : {"1", "2", "3"}) {
      REQUIRE(store->add(topic, id, "{}", kNow).is_ok());
    }
  }
  REQUIRE(store->add("p", "later", "{}", in_ms(60000)).is_ok());
  REQUIRE(store->promote(0, 100)->moved == 6);
  auto batch = store->reserve(0, "r1", {slot("p", 30000), slot("q", 30000)}, 10, 1 << 20);
  REQUIRE(batch.is_ok());
  REQUIRE(batch->jobs.size() == 6);
  std::vector<BlockingJobStore::AckRequest> acks;
  for (const auto& job : batch->jobs) {
    acks.push_back({job.job.topic, job.job.id, job.lease});
  }
  acks.push_back(acks.front());  // the first job again
  auto acked = store->ack_all(0, acks);
  REQUIRE(acked.size() == 7);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(*acked[i] == AckOutcome::kAcked);
  }
  CHECK(*acked[6] == AckOutcome::kGone);
  CHECK(stat(redis, "p:delivered") == 3);
  CHECK(stat(redis, "q:delivered") == 3);
  CHECK(counts(redis) == std::map<std::string, int64_t>{{"p:d", 1}});
  CHECK(record_count(redis) == 1);
  check_consistent(redis);
}

// ====================================================================== exact leases

TEST_CASE("a lease names one incarnation: deleted and re-added, the old lease touches nothing") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{\"v\":1}", kNow).is_ok());
  ReservedJob old = reserve_one(*store, "t", 30000, "r1");
  REQUIRE(store->del("t", "1").is_ok());
  auto readded = store->add("t", "1", "{\"v\":2}", in_ms(60000));
  REQUIRE(readded.is_ok());
  CHECK_FALSE(readded->existing);
  auto fresh = store->get("t", "1");
  REQUIRE(fresh.is_ok());
  CHECK(fresh->incarnation != old.lease.incarnation);
  std::string before = redis.dump_all();

  CHECK(*ack(*store, 0, "t", "1", old.lease) == AckOutcome::kGone);
  CHECK(*store->fail(0, "t", "1", old.lease, 0, 1, "late") == FailOutcome::kStale);
  CHECK(redis.dump_all() == before);
  auto still = store->get("t", "1");
  REQUIRE(still.is_ok());
  CHECK(still->state == JobState::kDelayed);
  CHECK(still->body == "{\"v\":2}");
  CHECK(still->due_at_ms == readded->due_ms);
  CHECK(still->last_error.empty());
}

TEST_CASE("a lease's ack after it expired still removes the same job (acked late)") {
  TestRedis redis;
  auto store = store_over({&redis});

  SUBCASE("requeued to ready") {
    REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
    ReservedJob job = reserve_one(*store, "t", 50, "r1");
    sleep_ms(120);
    // Under a loaded sanitizer run the first look can come a moment early.
    int requeued = store->requeue_expired(0, 100)->requeued;
    for (int tries = 0; requeued == 0 && tries < 20; ++tries) {
      sleep_ms(100);
      requeued = store->requeue_expired(0, 100)->requeued;
    }
    REQUIRE(requeued == 1);
    REQUIRE(store->get("t", "1")->state == JobState::kReady);
    CHECK(*ack(*store, 0, "t", "1", job.lease) == AckOutcome::kAckedLate);
    CHECK(store->get("t", "1").status().code() == Code::kNotFound);
    CHECK(llen(redis, keys::ready("t")) == 0);
    CHECK(hlen(redis, keys::errors()) == 0);
  }
  SUBCASE("leased again under another reserve id") {
    REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
    ReservedJob first = reserve_one(*store, "t", 50, "r1");
    sleep_ms(120);
    REQUIRE(store->requeue_expired(0, 100)->requeued == 1);
    ReservedJob second = reserve_one(*store, "t", 30000, "r2");
    CHECK(second.job.attempts == 2);
    CHECK(second.lease.incarnation == first.lease.incarnation);
    // The first holder's fail is stale, its ack is not: the callback succeeded.
    CHECK(*store->fail(0, "t", "1", first.lease, 0, 5, "late") == FailOutcome::kStale);
    CHECK(*ack(*store, 0, "t", "1", first.lease) == AckOutcome::kAckedLate);
    CHECK(store->get("t", "1").status().code() == Code::kNotFound);
    CHECK(leased_count(redis) == 0);
    CHECK(*ack(*store, 0, "t", "1", second.lease) == AckOutcome::kGone);
    CHECK(*store->fail(0, "t", "1", second.lease, 0, 5, "x") == FailOutcome::kStale);
  }
  CHECK(stat(redis, "t:delivered") == 1);
  CHECK(counts(redis).empty());
  check_consistent(redis);
}

TEST_CASE("a stale fail changes nothing") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  ReservedJob job = reserve_one(*store, "t", 50, "r1");
  std::string before = redis.dump_all();
  Lease other_reserve{job.lease.incarnation, "r-other"};
  Lease other_incarnation{job.lease.incarnation + "0", job.lease.reserve_id};
  CHECK(*store->fail(0, "t", "1", other_reserve, 1000, 5, "late") == FailOutcome::kStale);
  CHECK(*store->fail(0, "t", "1", other_incarnation, 1000, 5, "late") == FailOutcome::kStale);
  CHECK(*store->fail(0, "t", "nope", job.lease, 1000, 5, "late") == FailOutcome::kStale);
  CHECK(redis.dump_all() == before);
  // Requeued after its lease ran out: the holder's own fail is stale too.
  sleep_ms(120);
  REQUIRE(store->requeue_expired(0, 100)->requeued == 1);
  before = redis.dump_all();
  CHECK(*store->fail(0, "t", "1", job.lease, 1000, 5, "late") == FailOutcome::kStale);
  CHECK(redis.dump_all() == before);
}

// ====================================================================== release

TEST_CASE("release gives the jobs back to the front of the ready list, no attempt counted") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (int i = 0; i < 4; ++i) {
    REQUIRE(store->add("t", std::to_string(i), "{}", in_ms(-10 + i)).is_ok());
  }
  REQUIRE(store->promote(0, 100)->moved == 4);
  auto batch = store->reserve(0, "r1", {slot("t", 30000)}, 2, 1 << 20);
  REQUIRE(batch->jobs.size() == 2);
  CHECK(lrange(redis, keys::ready("t")) == std::vector<std::string>{"t:2", "t:3"});

  auto released = store->release(0, "r1");
  REQUIRE(released.is_ok());
  CHECK(*released == 2);
  CHECK(lrange(redis, keys::ready("t")) == std::vector<std::string>{"t:0", "t:1", "t:2", "t:3"});
  for (const char* id : {"0", "1"}) {
    auto job = store->get("t", id);
    CHECK(job->state == JobState::kReady);
    CHECK(job->attempts == 0);
  }
  CHECK(leased_count(redis) == 0);
  CHECK(integer(redis, {"EXISTS", keys::lease("r1")}) == 0);
  CHECK(counts(redis) == std::map<std::string, int64_t>{{"t:r", 4}});
  CHECK(llen(redis, keys::consumer_wake()) >= 1);
  // The released leases are void.
  CHECK(*store->fail(0, "t", "0", batch->jobs[0].lease, 0, 5, "x") == FailOutcome::kStale);

  // The same reserve id arriving late (queued in a stalled Redis) takes nothing.
  auto late = store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20);
  REQUIRE(late.is_ok());
  CHECK(late->jobs.empty());
  CHECK(llen(redis, keys::ready("t")) == 4);
  CHECK(integer(redis, {"PTTL", keys::cancel("r1")}) > 0);

  // Another reserve id gets them, and its attempt is the first.
  auto next = store->reserve(0, "r2", {slot("t", 30000)}, 1, 1 << 20);
  REQUIRE(next->jobs.size() == 1);
  CHECK(next->jobs[0].job.id == "0");
  CHECK(next->jobs[0].job.attempts == 1);
  CHECK(*store->release(0, "r-unknown") == 0);
  check_consistent(redis);
}

TEST_CASE("release before its reserve ran: the reserve takes nothing") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  REQUIRE(store->promote(0, 100)->moved == 1);
  CHECK(*store->release(0, "r1") == 0);
  auto late = store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20);
  REQUIRE(late.is_ok());
  CHECK(late->jobs.empty());
  CHECK(store->get("t", "1")->state == JobState::kReady);
  CHECK(store->get("t", "1")->attempts == 0);
}

TEST_CASE("release leaves jobs alone that moved on since the reserve") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (const char* id : {"acked", "expired"}) {
    REQUIRE(store->add("t", id, "{}", kNow).is_ok());
  }
  REQUIRE(store->promote(0, 100)->moved == 2);
  auto batch = store->reserve(0, "r1", {slot("t", 50)}, 10, 1 << 20);
  REQUIRE(batch->jobs.size() == 2);
  for (const auto& job : batch->jobs) {
    if (job.job.id == "acked") {
      REQUIRE(*ack(*store, 0, "t", "acked", job.lease) == AckOutcome::kAcked);
    }
  }
  sleep_ms(120);
  REQUIRE(store->requeue_expired(0, 100)->requeued == 1);
  ReservedJob again = reserve_one(*store, "t", 30000, "r2");
  CHECK(*store->release(0, "r1") == 0);
  auto job = store->get("t", "expired");
  CHECK(job->state == JobState::kWorking);  // still leased to r2
  CHECK(job->attempts == 2);
  CHECK(*ack(*store, 0, "t", "expired", again.lease) == AckOutcome::kAcked);
}

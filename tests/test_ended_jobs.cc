// Ended records: a job that ran (delivered, or dead after its attempts) is
// remembered for its topic's dedup window, so a producer's retry of its add (same id,
// same body) is answered with how it ended and never runs the job again
// (remember_end and ended_with in common/store/lua/lib/prelude.lua).
#include <doctest/doctest.h>

#include "tests/support/e2e.h"
#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

namespace {

constexpr int64_t kWindowMs = 60000;

// Adds a job due now, reserves it and acks it with the window given.
Added deliver(BlockingJobStore& store, const std::string& topic, const std::string& id,
              const std::string& body, int64_t window_ms) {
  auto added = store.add(topic, id, body, kNow);
  REQUIRE(added.is_ok());
  REQUIRE_FALSE(added->existing);
  ReservedJob job = reserve_one(store, topic, 30000, "r-" + id);
  auto acked = store.ack_all(0, {{topic, id, job.lease, EndMemory{window_ms, 0}.arg()}});
  REQUIRE(acked.size() == 1);
  REQUIRE(acked[0].is_ok());
  REQUIRE(*acked[0] == AckOutcome::kAcked);
  return *added;
}

}  // namespace

TEST_CASE("a delivered job's retried add answers 200 existing, delivered; nothing runs again") {
  TestRedis redis;
  auto store = store_over({&redis});
  Added first = deliver(*store, "t", "1", "{\"n\":1}", kWindowMs);
  int64_t after_ack = redis_time_ms(redis);

  auto retried = store->add("t", "1", "{\"n\":1}", kNow);
  REQUIRE(retried.is_ok());
  CHECK(retried->existing);
  CHECK(retried->ended == "delivered");
  CHECK(retried->due_ms == first.due_ms);
  CHECK(retried->ended_at_ms > 0);
  CHECK(retried->ended_at_ms <= after_ack);
  // Nothing was written: no job, no counts, nothing for the timer.
  CHECK(store->get("t", "1").status().code() == Code::kNotFound);
  CHECK(record_count(redis) == 0);
  CHECK(delayed_count(redis) == 0);
  check_consistent(redis);
  // The window is the key's time to live.
  int64_t ttl = integer(redis, {"PTTL", keys::ended(job_key("t", "1"))});
  CHECK(ttl > 0);
  CHECK(ttl <= kWindowMs);

  // Another body under the same id is a new job.
  auto other = store->add("t", "1", "{\"n\":2}", in_ms(60000));
  REQUIRE(other.is_ok());
  CHECK_FALSE(other->existing);
  CHECK(other->ended.empty());
  // While it is pending, the first body's retry is a conflict, not "ended".
  auto old_retry = store->add("t", "1", "{\"n\":1}", kNow);
  CHECK(old_retry.status().code() == Code::kConflict);
  auto same_new = store->add("t", "1", "{\"n\":2}", kNow);
  REQUIRE(same_new.is_ok());
  CHECK(same_new->existing);
  CHECK(same_new->ended.empty());
  check_consistent(redis);
}

TEST_CASE("a window of 0 remembers nothing; a short window ends by itself") {
  TestRedis redis;
  auto store = store_over({&redis});
  deliver(*store, "t", "zero", "{}", 0);
  CHECK(integer(redis, {"EXISTS", keys::ended(job_key("t", "zero"))}) == 0);
  auto again = store->add("t", "zero", "{}", in_ms(60000));
  REQUIRE(again.is_ok());
  CHECK_FALSE(again->existing);

  deliver(*store, "t", "short", "{}", 300);
  auto within = store->add("t", "short", "{}", kNow);
  REQUIRE(within.is_ok());
  CHECK(within->ended == "delivered");
  wait_until(10000, [&] {
    return integer(redis, {"EXISTS", keys::ended(job_key("t", "short"))}) == 0;
  });
  auto after = store->add("t", "short", "{}", in_ms(60000));
  REQUIRE(after.is_ok());
  CHECK_FALSE(after->existing);
  CHECK(after->ended.empty());
  check_consistent(redis);
}

TEST_CASE("a big body is compared too; a delete is not remembered: delete then add moves a job") {
  TestRedis redis;
  auto store = store_over({&redis});
  std::string big(5000, 'b');  // stored apart from its record
  deliver(*store, "t", "big", big, kWindowMs);
  auto retried = store->add("t", "big", big, kNow);
  REQUIRE(retried.is_ok());
  CHECK(retried->existing);
  CHECK(retried->ended == "delivered");
  CHECK(record_count(redis) == 0);
  CHECK(integer(redis, {"EXISTS", keys::bodies()}) == 0);
  std::string other = big;
  other.back() = 'c';
  auto changed = store->add("t", "big", other, in_ms(60000));
  REQUIRE(changed.is_ok());
  CHECK_FALSE(changed->existing);
  check_consistent(redis);

  // A delete is the producer's own act: the same add right after it is a
  // new job (moving a reminder to another time), never answered as ended.
  REQUIRE(store->add("t", "moved", "{}", in_ms(60000)).is_ok());
  REQUIRE(store->del("t", "moved").is_ok());
  CHECK(integer(redis, {"EXISTS", keys::ended(job_key("t", "moved"))}) == 0);
  auto readded = store->add("t", "moved", "{}", in_ms(120000));
  REQUIRE(readded.is_ok());
  CHECK_FALSE(readded->existing);
  CHECK(readded->ended.empty());
  check_consistent(redis);
}

TEST_CASE("a dead job's retried add answers dead, by a failed attempt or an expired lease") {
  TestRedis redis;
  auto store = store_over({&redis});
  // The last attempt failed: dead with the topic's window.
  REQUIRE(store->add("t", "failed", "{\"f\":1}", kNow).is_ok());
  ReservedJob job = reserve_one(*store, "t", 30000, "r1", 1);
  FailDeferral deferral;
  deferral.end_memory = EndMemory{kWindowMs, 0};
  auto failed = store->fail(0, "t", "failed", job.lease, 1000, 1, "HTTP 500", deferral);
  REQUIRE(failed.is_ok());
  REQUIRE(*failed == FailOutcome::kDead);
  auto retried = store->add("t", "failed", "{\"f\":1}", kNow);
  REQUIRE(retried.is_ok());
  CHECK(retried->existing);
  CHECK(retried->ended == "dead");
  CHECK(store->get("t", "failed")->state == JobState::kDead);  // still a dead letter
  // Another body for a dead id is refused, as before: requeue or purge it first.
  CHECK(store->add("t", "failed", "{\"f\":2}", kNow).status().code() == Code::kConflict);

  // The lease of the last attempt expired: the topic's window from the list,
  // or the default one for a topic not listed.
  REQUIRE(store->add("listed", "a", "{}", kNow).is_ok());
  REQUIRE(store->add("other", "b", "{}", kNow).is_ok());
  reserve_one(*store, "listed", 100, "r2", 1);
  reserve_one(*store, "other", 100, "r3", 1);
  sleep_ms(300);  // both 100 ms leases run out
  auto expired =
      store->requeue_expired(0, 100, {{"listed", false, EndMemory{}}}, EndMemory{kWindowMs, 0});
  REQUIRE(expired.is_ok());
  CHECK(expired->dead.size() == 2);
  // Window 0: nothing remembered, so the dead letter is a conflict, as before.
  CHECK(store->add("listed", "a", "{}", kNow).status().code() == Code::kConflict);
  auto other = store->add("other", "b", "{}", kNow);
  REQUIRE(other.is_ok());
  CHECK(other->ended == "dead");
  check_consistent(redis);
}

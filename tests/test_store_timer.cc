// The timer's calls through BlockingJobStore (AsyncJobStore underneath):
// promote by Redis's clock, lease expiry and dead-lettering, and the wake
// lists with their BLPOP waits.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>

#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

// ====================================================================== promote / clock

TEST_CASE("promote moves only due jobs, at most `limit`, and tells the next due time") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t now = redis_time_ms(redis);
  REQUIRE(store->add("t", "past", "{}", at_ms(now - 1000)).is_ok());
  REQUIRE(store->add("t", "now", "{}", at_ms(now)).is_ok());
  REQUIRE(store->add("t", "later", "{}", at_ms(now + 50000)).is_ok());
  REQUIRE(store->add("t", "latest", "{}", at_ms(now + 90000)).is_ok());

  auto promoted = store->promote(0, 100);
  REQUIRE(promoted.is_ok());
  CHECK(promoted->moved == 2);
  REQUIRE(promoted->next_due_ms.has_value());
  CHECK(*promoted->next_due_ms == now + 50000);
  CHECK(promoted->redis_now_ms >= now);
  CHECK(store->get("t", "past")->state == JobState::kReady);
  CHECK(store->get("t", "now")->state == JobState::kReady);
  CHECK(store->get("t", "later")->state == JobState::kDelayed);
  // Both are due at Redis's now when added (an `at` in the past is due then),
  // so their order in the ready list is not the order of their `at`s.
  auto ready = lrange(redis, keys::ready("t"));
  std::sort(ready.begin(), ready.end());
  CHECK(ready == std::vector<std::string>{"t:now", "t:past"});
  CHECK(counts(redis) == std::map<std::string, int64_t>{{"t:d", 2}, {"t:r", 2}});

  // The limit caps a batch.
  for (const char* id : {"a", "b", "c"}) {
    REQUIRE(store->add("t", id, "{}", in_ms(-5)).is_ok());
  }
  CHECK(store->promote(0, 1)->moved == 1);
  CHECK(store->promote(0, 1)->moved == 1);
  auto last = store->promote(0, 1);
  CHECK(last->moved == 1);
  CHECK(*last->next_due_ms == now + 50000);
  CHECK(store->promote(0, 100)->moved == 0);
  CHECK(llen(redis, keys::ready("t")) == 5);

  // Nothing delayed: no next due time.
  REQUIRE(store->del("t", "later").is_ok());
  REQUIRE(store->del("t", "latest").is_ok());
  CHECK_FALSE(store->promote(0, 100)->next_due_ms.has_value());
  check_consistent(redis);
}

TEST_CASE("promote holds a closed window's due jobs: delayed, at the opening + k x spacing") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t now = redis_time_ms(redis);
  for (const char* id : {"a", "b", "c"}) {
    REQUIRE(store->add("quiet", id, "{}", at_ms(now - 1000)).is_ok());
  }
  REQUIRE(store->add("loud", "x", "{}", at_ms(now - 1000)).is_ok());
  const int64_t opens = now + 3600000;
  const std::vector<WindowHold> closed = {{"quiet", opens, 250.0}};

  auto promoted = store->promote(0, 100, closed);
  REQUIRE(promoted.is_ok());
  CHECK(promoted->moved == 1);  // the other topic's job only
  CHECK(promoted->held == 3);
  REQUIRE(promoted->next_due_ms.has_value());
  CHECK(*promoted->next_due_ms == opens);
  std::vector<int64_t> due;
  for (const char* id : {"a", "b", "c"}) {
    auto job = store->get("quiet", id);
    REQUIRE(job.is_ok());
    CHECK(job->state == JobState::kDelayed);
    CHECK(job->attempts == 0);
    CHECK(job->held_by_window);
    due.push_back(job->due_at_ms);
  }
  std::sort(due.begin(), due.end());
  CHECK(due == std::vector<int64_t>{opens, opens + 250, opens + 500});
  CHECK(store->get("loud", "x")->state == JobState::kReady);
  CHECK_FALSE(store->get("loud", "x")->held_by_window);
  CHECK(llen(redis, keys::ready("quiet")) == 0);
  check_consistent(redis);

  // A job held later for the same opening takes the next turn.
  REQUIRE(store->add("quiet", "d", "{}", at_ms(now - 1000)).is_ok());
  CHECK(store->promote(0, 100, closed)->held == 1);
  CHECK(store->get("quiet", "d")->due_at_ms == opens + 750);

  // An opening Redis's clock has passed holds nothing: the job goes ready.
  REQUIRE(store->add("quiet", "e", "{}", at_ms(now - 1000)).is_ok());
  auto open_now = store->promote(0, 100, {{"quiet", now - 1, 250.0}});
  CHECK(open_now->moved == 1);
  CHECK(open_now->held == 0);
  CHECK(store->get("quiet", "e")->state == JobState::kReady);

  // An update clears the mark (its new due time is its own).
  UpdateRequest later;
  later.topic = "quiet";
  later.id = "a";
  later.due = at_ms(now + 5000);
  later.add_due = *later.due;
  REQUIRE(store->update(later).is_ok());
  CHECK_FALSE(store->get("quiet", "a")->held_by_window);
  check_consistent(redis);
}

TEST_CASE("due times follow Redis's clock: nothing is promoted before Redis's TIME passes it") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t start = redis_time_ms(redis);
  int64_t due = start + 500;
  auto added = store->add("t", "soon", "{}", at_ms(due));
  REQUIRE(added.is_ok());
  CHECK(added->due_ms == due);
  bool moved = false;
  for (int i = 0; i < 100 && !moved; ++i) {
    int64_t before = redis_time_ms(redis);
    auto promoted = store->promote(0, 100);
    int64_t after = redis_time_ms(redis);
    REQUIRE(promoted.is_ok());
    // redis_now_ms is Redis's TIME during the call.
    CHECK(promoted->redis_now_ms >= before);
    CHECK(promoted->redis_now_ms <= after);
    // Moved exactly when Redis's clock reached the due time.
    CHECK((promoted->moved == 1) == (promoted->redis_now_ms >= due));
    if (promoted->moved == 0) {
      CHECK(*promoted->next_due_ms == due);
    }
    moved = promoted->moved == 1;
    if (!moved) {
      sleep_ms(40);
    }
  }
  CHECK(moved);
  CHECK(redis_time_ms(redis) - start >= 500);

  // Lease deadlines are Redis's now + lease_ms.
  int64_t before = redis_time_ms(redis);
  ReservedJob job = reserve_one(*store, "t", 7000, "r1");
  int64_t after = redis_time_ms(redis);
  auto deadline = zscore(redis, keys::working(), "t:soon");
  REQUIRE(deadline.has_value());
  CHECK(*deadline >= before + 7000);
  CHECK(*deadline <= after + 7000);
  CHECK(job.job.due_at_ms == due);
}

// ====================================================================== lease expiry

TEST_CASE("requeue_expired returns a job whose lease ran out; the attempt counts") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  reserve_one(*store, "t", 600, "r1");
  auto early = store->requeue_expired(0, 100);
  REQUIRE(early.is_ok());
  CHECK(early->requeued == 0);  // lease still running
  CHECK(early->dead.empty());
  CHECK(store->get("t", "1")->state == JobState::kWorking);
  sleep_ms(700);
  auto expired = store->requeue_expired(0, 100);
  REQUIRE(expired.is_ok());
  CHECK(expired->requeued == 1);
  CHECK(expired->dead.empty());
  auto requeued = store->get("t", "1");
  CHECK(requeued->state == JobState::kReady);
  CHECK(requeued->attempts == 1);
  CHECK(requeued->last_error.rfind("lease expired", 0) == 0);
  CHECK(leased_count(redis) == 0);
  CHECK(llen(redis, keys::consumer_wake()) >= 1);
  auto again = store->reserve(0, "r2", {slot("t", 5000)}, 10, 1 << 20);
  REQUIRE(again->jobs.size() == 1);
  CHECK(again->jobs[0].job.attempts == 2);
  CHECK(stat(redis, "t:expired") == 1);
  check_consistent(redis);
}

TEST_CASE("lease expiry dead-letters a job that used its max attempts") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{\"b\":2}", kNow).is_ok());
  reserve_one(*store, "t", 50, "r1", 2);
  sleep_ms(120);
  auto first = store->requeue_expired(0, 100);
  REQUIRE(first.is_ok());
  CHECK(first->requeued == 1);
  CHECK(first->dead.empty());
  CHECK(store->get("t", "1")->state == JobState::kReady);

  ReservedJob second = reserve_one(*store, "t", 50, "r2", 2);
  CHECK(second.job.attempts == 2);
  sleep_ms(120);
  auto last = store->requeue_expired(0, 100);
  REQUIRE(last.is_ok());
  CHECK(last->requeued == 0);
  REQUIRE(last->dead.size() == 1);
  CHECK(last->dead[0].first == "t:1");
  CHECK(last->dead[0].second == 2);
  auto dead = store->get("t", "1");
  REQUIRE(dead.is_ok());
  CHECK(dead->state == JobState::kDead);
  CHECK(dead->attempts == 2);
  CHECK(dead->last_error.rfind("lease expired", 0) == 0);
  CHECK(*test::dead_count(*store, "t") == 1);
  CHECK(test::dead_list(*store, "t", 0, 10)->jobs[0].body == "{\"b\":2}");
  CHECK(stat(redis, "t:expired") == 2);
  CHECK(stat(redis, "t:dead") == 1);
  CHECK(counts(redis) == std::map<std::string, int64_t>{{"t:x", 1}});
  check_consistent(redis);
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
  REQUIRE(store->add("t", "1", "{}", in_ms(5000)).is_ok());
  CHECK(llen(redis, keys::timer_wake()) == 1);
  REQUIRE(store->add("t", "2", "{}", in_ms(9000)).is_ok());  // later: no token
  CHECK(llen(redis, keys::timer_wake()) == 1);
  int64_t now = redis_time_ms(redis);
  REQUIRE(store->add("t", "3", "{}", at_ms(now - 1000)).is_ok());  // past: due at Redis's now
  REQUIRE(store->add("t", "4", "{}", in_ms(-2000)).is_ok());       // earlier still
  CHECK(llen(redis, keys::timer_wake()) == 3);
  CHECK(*store->wait_timer_wake(0, 100));
  CHECK(*store->wait_timer_wake(0, 0));
  CHECK(*store->wait_timer_wake(0, 0));
  CHECK_FALSE(*store->wait_timer_wake(0, 0));

  // Promote wakes consumers, one token per job moved.
  CHECK(store->promote(0, 100)->moved == 2);
  CHECK(llen(redis, keys::consumer_wake()) == 2);
  start = monotonic_ms();
  CHECK(*store->wait_consumer_wake(0, 1000));
  CHECK(monotonic_ms() - start < 500);
}

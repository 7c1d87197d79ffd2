// Fail, the dead-letter set over shards, and the counters and stats every
// transition keeps, through BlockingJobStore (AsyncJobStore underneath).
#include <doctest/doctest.h>
#include <signal.h>

#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

// ====================================================================== fail / dead letters

TEST_CASE("fail retries after the delay, then dead-letters; requeue and purge") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{\"x\":1}", kNow).is_ok());

  ReservedJob first = reserve_one(*store, "t", 30000, "r1");
  CHECK(first.job.attempts == 1);
  int64_t before = redis_time_ms(redis);
  auto outcome = store->fail(0, "t", "1", first.lease, 800, 2, "HTTP 500");
  int64_t after = redis_time_ms(redis);
  REQUIRE(outcome.is_ok());
  CHECK(*outcome == FailOutcome::kRescheduled);
  auto retrying = store->get("t", "1");
  REQUIRE(retrying.is_ok());
  CHECK(retrying->state == JobState::kRetrying);
  CHECK(retrying->attempts == 1);
  CHECK(retrying->due_at_ms >= before + 800);
  CHECK(retrying->due_at_ms <= after + 800);
  CHECK(retrying->last_error == "HTTP 500");
  CHECK(retrying->last_error_at_ms >= before);
  CHECK(retrying->last_error_at_ms <= after);
  CHECK(leased_count(redis) == 0);
  CHECK(store->promote(0, 100)->moved == 0);  // not due yet
  check_consistent(redis);

  sleep_ms(900);
  ReservedJob second = reserve_one(*store, "t", 30000, "r2");
  CHECK(second.job.attempts == 2);
  CHECK(*store->fail(0, "t", "1", second.lease, 300, 2, "timeout after 5000 ms") ==
        FailOutcome::kDead);

  auto dead = store->get("t", "1");
  CHECK(dead->state == JobState::kDead);
  CHECK(dead->attempts == 2);
  CHECK(dead->last_error == "timeout after 5000 ms");
  CHECK(*test::dead_count(*store, "t") == 1);
  auto listed = test::dead_list(*store, "t", 0, 10);
  REQUIRE(listed.is_ok());
  REQUIRE(listed->jobs.size() == 1);
  CHECK(listed->jobs[0].id == "1");
  CHECK(listed->jobs[0].topic == "t");
  CHECK(listed->jobs[0].state == JobState::kDead);
  CHECK(listed->jobs[0].body == "{\"x\":1}");
  CHECK(listed->jobs[0].last_error == "timeout after 5000 ms");
  CHECK(stat(redis, "t:failed") == 2);
  CHECK(stat(redis, "t:dead") == 1);
  check_consistent(redis);

  int64_t requeue_time = redis_time_ms(redis);
  CHECK(*test::dead_requeue(*store, "t", "1") == 1);
  auto back = store->get("t", "1");
  CHECK(back->state == JobState::kDelayed);
  CHECK(back->attempts == 0);
  CHECK(back->due_at_ms >= requeue_time);
  CHECK(back->due_at_ms <= redis_time_ms(redis));
  CHECK(back->last_error.empty());
  CHECK(*test::dead_count(*store, "t") == 0);
  CHECK(test::dead_requeue(*store, "t", "1").status().code() == Code::kNotFound);
  check_consistent(redis);

  // Kill it again, plus a second one, and purge both.
  REQUIRE(store->add("t", "2", "{}", kNow).is_ok());
  REQUIRE(store->promote(0, 100)->moved == 2);
  auto both = store->reserve(0, "r3", {slot("t", 30000)}, 10, 1 << 20);
  REQUIRE(both->jobs.size() == 2);
  for (const auto& job : both->jobs) {
    CHECK(*store->fail(0, "t", job.job.id, job.lease, 1000, 1, "gone") == FailOutcome::kDead);
  }
  CHECK(*test::dead_count(*store, "t") == 2);
  CHECK(*test::dead_purge(*store, "t") == 2);
  CHECK(*test::dead_count(*store, "t") == 0);
  CHECK(store->get("t", "1").status().code() == Code::kNotFound);
  CHECK(store->get("t", "2").status().code() == Code::kNotFound);
  CHECK(hlen(redis, keys::errors()) == 0);
  CHECK(hlen(redis, keys::bodies()) == 0);
  CHECK(counts(redis).empty());
}

TEST_CASE("dead_requeue of all and dead_list paging over shards") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  for (int i = 0; i < 20; ++i) {
    REQUIRE(store->add("t", std::to_string(i), "{}", kNow).is_ok());
  }
  int64_t on_one = record_count(one);
  int64_t on_two = record_count(two);
  CHECK(on_one + on_two == 20);
  for (size_t shard = 0; shard < 2; ++shard) {
    REQUIRE(store->promote(shard, 100).is_ok());
    auto batch = store->reserve(shard, "r" + std::to_string(shard), {slot("t", 30000, 100, 100)},
                                100, 1 << 20);
    REQUIRE(batch.is_ok());
    CHECK(static_cast<int64_t>(batch->jobs.size()) == (shard == 0 ? on_one : on_two));
    for (const auto& job : batch->jobs) {
      CHECK(job.shard == shard);
      REQUIRE(*store->fail(shard, "t", job.job.id, job.lease, 1000, 1, "e" + job.job.id) ==
              FailOutcome::kDead);
    }
  }
  CHECK(*test::dead_count(*store, "t") == 20);
  std::set<std::string> seen;
  for (size_t offset = 0; offset < 20; offset += 7) {
    auto page = test::dead_list(*store, "t", offset, 7);
    REQUIRE(page.is_ok());
    CHECK(page->jobs.size() == std::min<size_t>(7, 20 - offset));
    for (const auto& dead : page->jobs) {
      CHECK(dead.last_error == "e" + dead.id);
      seen.insert(dead.id);
    }
  }
  CHECK(seen.size() == 20);
  CHECK(test::dead_list(*store, "t", 20, 5)->jobs.empty());
  CHECK(*test::dead_requeue(*store, "t", "") == 20);
  CHECK(*test::dead_count(*store, "t") == 0);
  CHECK(store->get("t", "7")->state == JobState::kDelayed);
  CHECK(stat(one, "t:requeued") + stat(two, "t:requeued") == 20);
  check_consistent(one);
  check_consistent(two);
}

// ====================================================================== stats / counts

TEST_CASE("stats keys always carry a TTL, and counts follow every transition") {
  TestRedis redis;
  auto store = store_over({&redis});
  using Counts = std::map<std::string, int64_t>;
  // Drops the day's stats hash, so each path must set the TTL itself.
  auto fresh_stats = [&] { redis.command({"DEL", stats_key()}); };
  auto check_ttl = [&](const char* path) {
    INFO("after " << path);
    int64_t ttl = stats_ttl(redis);
    CHECK(ttl > 86400);
    CHECK(ttl <= 3456000);
  };

  for (const char* id : {"a", "b", "c", "d", "e", "f"}) {
    fresh_stats();
    REQUIRE(store->add("s", id, "{}", kNow).is_ok());
    check_ttl("add");
  }
  CHECK(counts(redis) == Counts{{"s:d", 6}});
  CHECK(stat(redis, "s:added") == 1);  // the hash was dropped before the last add

  REQUIRE(store->promote(0, 100)->moved == 6);
  CHECK(counts(redis) == Counts{{"s:r", 6}});

  auto batch = store->reserve(0, "r1", {slot("s", 30000)}, 3, 1 << 20);
  REQUIRE(batch->jobs.size() == 3);  // a, b, c
  CHECK(counts(redis) == Counts{{"s:r", 3}, {"s:w", 3}});

  fresh_stats();
  REQUIRE(*ack(*store, 0, "s", "a", batch->jobs[0].lease) == AckOutcome::kAcked);
  check_ttl("ack");
  CHECK(stat(redis, "s:delivered") == 1);
  CHECK(counts(redis) == Counts{{"s:r", 3}, {"s:w", 2}});

  fresh_stats();
  REQUIRE(*store->fail(0, "s", "b", batch->jobs[1].lease, 60000, 5, "x") ==
          FailOutcome::kRescheduled);
  check_ttl("fail");
  CHECK(stat(redis, "s:failed") == 1);
  CHECK(counts(redis) == Counts{{"s:r", 3}, {"s:w", 1}, {"s:y", 1}});

  fresh_stats();
  REQUIRE(*store->fail(0, "s", "c", batch->jobs[2].lease, 60000, 1, "x") == FailOutcome::kDead);
  check_ttl("fail to dead");
  CHECK(stat(redis, "s:dead") == 1);
  CHECK(counts(redis) == Counts{{"s:r", 3}, {"s:x", 1}, {"s:y", 1}});

  // d expires and goes back; e expires into the dead-letter set.
  auto d = store->reserve(0, "r2", {slot("s", 50, 1, 1, 5)}, 1, 1 << 20);
  auto e = store->reserve(0, "r3", {slot("s", 50, 1, 1, 1)}, 1, 1 << 20);
  REQUIRE(d->jobs.size() == 1);
  REQUIRE(e->jobs.size() == 1);
  CHECK(counts(redis) == Counts{{"s:r", 1}, {"s:w", 2}, {"s:x", 1}, {"s:y", 1}});
  sleep_ms(120);
  fresh_stats();
  auto expired = store->requeue_expired(0, 100);
  REQUIRE(expired->requeued == 1);
  REQUIRE(expired->dead.size() == 1);
  check_ttl("lease expiry");
  CHECK(stat(redis, "s:expired") == 2);
  CHECK(stat(redis, "s:dead") == 1);
  CHECK(counts(redis) == Counts{{"s:r", 2}, {"s:x", 2}, {"s:y", 1}});

  fresh_stats();
  REQUIRE(store->del("s", "f").is_ok());
  check_ttl("del");
  CHECK(stat(redis, "s:deleted") == 1);
  CHECK(counts(redis) == Counts{{"s:r", 1}, {"s:x", 2}, {"s:y", 1}});

  fresh_stats();
  REQUIRE(*test::dead_requeue(*store, "s", "") == 2);
  check_ttl("dead requeue");
  CHECK(counts(redis) == Counts{{"s:d", 2}, {"s:r", 1}, {"s:y", 1}});
  check_consistent(redis);

  REQUIRE(store->del("s", "b").is_ok());
  REQUIRE(store->del("s", "c").is_ok());
  REQUIRE(store->del("s", "d").is_ok());
  REQUIRE(store->del("s", "e").is_ok());
  CHECK(counts(redis).empty());
  CHECK(record_count(redis) == 0);
}

TEST_CASE("totals and per-minute counters follow the day's stats, minutes expire") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "a", "{}", kNow).is_ok());
  REQUIRE(store->add("t", "b", "{}", kNow).is_ok());
  REQUIRE(store->promote(0, 100)->moved == 2);
  auto batch = store->reserve(0, "r1", {slot("t", 30000)}, 2, 1 << 20);
  REQUIRE(batch->jobs.size() == 2);
  REQUIRE(*ack(*store, 0, "t", batch->jobs[0].job.id, batch->jobs[0].lease) == AckOutcome::kAcked);
  REQUIRE(*store->fail(0, "t", batch->jobs[1].job.id, batch->jobs[1].lease, 60000, 1, "x") ==
          FailOutcome::kDead);

  std::map<std::string, int64_t> expected{
      {"t:added", 2}, {"t:delivered", 1}, {"t:failed", 1}, {"t:dead", 1}};
  auto read_hash = [&](const std::string& key, std::map<std::string, int64_t>& into) {
    auto reply = redis.command({"HGETALL", key});
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
      into[text(reply->element[i])] += std::stoll(text(reply->element[i + 1]));
    }
  };
  std::map<std::string, int64_t> totals;
  read_hash(keys::totals(), totals);
  CHECK(totals == expected);
  CHECK(integer(redis, {"TTL", keys::totals()}) == -1);  // counters never expire

  // The run may straddle a minute: the minutes together hold every event.
  std::map<std::string, int64_t> minutes;
  auto minute_keys = redis.command({"KEYS", keys::minute_prefix() + "*"});
  REQUIRE(minute_keys->elements >= 1);
  for (size_t i = 0; i < minute_keys->elements; ++i) {
    std::string key = text(minute_keys->element[i]);
    read_hash(key, minutes);
    int64_t ttl = integer(redis, {"TTL", key});
    CHECK(ttl > 7000);
    CHECK(ttl <= 7500);
  }
  CHECK(minutes == expected);
}

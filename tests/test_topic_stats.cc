// topic_stats / all_topic_stats and list_topic_jobs (common/) against real
// redis-server instances: counters summed over two shards, the minute and
// day windows, a killed shard named as unreachable; listing order over
// shards, paging, the state filter, queue order of ready lists, the
// truncation flag; and the counters the Lua scripts really write.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "common/core/clock.h"
#include "common/store/job_listing.h"
#include "common/store/job_store.h"
#include "common/store/keys.h"
#include "common/store/topic_stats.h"
#include "tests/support/redis_server.h"
#include "tests/support/store_reads.h"

using namespace dq;
using dq::test::all_topic_stats;
using dq::test::list_topic_jobs;
using dq::test::TestRedis;
using dq::test::topic_stats;

namespace {

std::unique_ptr<JobStore> store_over(const std::vector<TestRedis*>& servers) {
  std::vector<ShardAddress> shards;
  shards.reserve(servers.size());
  for (TestRedis* server : servers) {
    shards.push_back(server->shard());
  }
  return std::make_unique<JobStore>(shards, 300, 2000);
}

// Redis's clock in seconds; waits past a minute's last seconds so a test
// that builds on "this minute" does not see it change.
int64_t redis_seconds_early_in_minute(TestRedis& redis) {
  for (;;) {
    auto reply = redis.command({"TIME"});
    int64_t seconds = std::stoll(std::string(reply->element[0]->str, reply->element[0]->len));
    if (seconds % 60 < 50) {
      return seconds;
    }
    std::this_thread::sleep_for(std::chrono::seconds(60 - seconds % 60));
  }
}

void hset(TestRedis& redis, const std::string& key, const std::string& field,
          const std::string& value) {
  redis.command({"HSET", key, field, value});
}

// A job record as the scripts write it: "state|attempts|due|created|inc|lease|max".
void put_job(TestRedis& redis, const std::string& topic, const std::string& id, char state,
             int64_t due, int attempts = 0) {
  hset(redis, keys::records_of(topic + ":" + id), topic + ":" + id,
       std::string(1, state) + "|" + std::to_string(attempts) + "|" + std::to_string(due) +
           "|1000|1||");
}

void put_delayed(TestRedis& redis, const std::string& topic, const std::string& id, char state,
                 int64_t due) {
  put_job(redis, topic, id, state, due);
  uint32_t bucket = keys::bucket_of(topic + ":" + id);
  redis.command({"ZADD", keys::due(bucket), std::to_string(due), topic + ":" + id});
  redis.command({"ZADD", keys::due_index(), "LT", std::to_string(due), std::to_string(bucket)});
}

std::vector<std::string> ids_of(const JobPage& page) {
  std::vector<std::string> ids;
  for (const auto& job : page.jobs) {
    ids.push_back(job.id);
  }
  return ids;
}

const TopicStats* find(const std::vector<TopicStats>& all, const std::string& topic) {
  for (const auto& stats : all) {
    if (stats.topic == topic) {
      return &stats;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("stats: counts, totals, minutes and days summed over two shards; a dead shard named") {
  TestRedis a, b;
  auto store = store_over({&a, &b});
  int64_t minute = redis_seconds_early_in_minute(a) / 60;
  std::string today = day_of(now_ms());

  hset(a, keys::counts(), "t:d", "3");
  hset(a, keys::counts(), "t:r", "1");
  hset(a, keys::counts(), "u:d", "5");
  hset(b, keys::counts(), "t:d", "2");
  hset(b, keys::counts(), "t:x", "4");
  hset(a, keys::totals(), "t:added", "10");
  hset(b, keys::totals(), "t:added", "5");
  hset(b, keys::totals(), "t:delivered", "7");
  hset(a, keys::minute(minute), "t:added", "2");
  hset(b, keys::minute(minute), "t:added", "1");
  hset(a, keys::minute(minute - 59), "t:failed", "1");
  hset(a, keys::minute(minute - 60), "t:added", "100");  // an hour ago: out of the window
  hset(b, keys::stats(today), "t:added", "9");
  hset(b, keys::stats(day_of(now_ms() - 29 * kDayMs)), "t:dead", "1");
  hset(b, keys::stats(day_of(now_ms() - 30 * kDayMs)), "t:added", "100");  // out of the window

  auto stats = topic_stats(*store, "t");
  REQUIRE(stats.is_ok());
  CHECK(stats->topic == "t");
  CHECK(stats->now.delayed == 5);
  CHECK(stats->now.ready == 1);
  CHECK(stats->now.dead == 4);
  CHECK(stats->now.working == 0);
  CHECK(stats->total.added == 15);
  CHECK(stats->total.delivered == 7);
  REQUIRE(stats->per_minute.size() == 60);
  CHECK(stats->per_minute.front().first == minute - 59);
  CHECK(stats->per_minute.front().second.failed == 1);
  CHECK(stats->per_minute.back().first == minute);
  CHECK(stats->per_minute.back().second.added == 3);
  int64_t minute_adds = 0;
  for (const auto& [m, counts] : stats->per_minute) {
    minute_adds += counts.added;
  }
  CHECK(minute_adds == 3);
  REQUIRE(stats->per_day.size() == 30);
  CHECK(stats->per_day.back().first == today);
  CHECK(stats->per_day.back().second.added == 9);
  CHECK(stats->per_day.front().second.dead == 1);
  int64_t day_adds = 0;
  for (const auto& [day, counts] : stats->per_day) {
    day_adds += counts.added;
  }
  CHECK(day_adds == 9);
  CHECK(stats->unreachable_shards.empty());

  Json json = to_json(*stats);
  CHECK(json["now"]["delayed"] == 5);
  CHECK(json["total"]["added"] == 15);
  CHECK(json["per_minute"].size() == 60);
  CHECK(json["per_minute"][59]["minute"] == minute);
  CHECK(json["per_minute"][59]["at_ms"] == minute * 60000);
  CHECK(json["per_day"][29]["day"] == today);
  CHECK(json["per_day"][29]["added"] == 9);

  auto cheap = topic_stats(*store, "t", /*with_series=*/false);
  REQUIRE(cheap.is_ok());
  CHECK(cheap->per_minute.empty());
  CHECK(cheap->now.delayed == 5);
  CHECK_FALSE(to_json(*cheap).contains("per_minute"));

  auto nothing = topic_stats(*store, "never");
  REQUIRE(nothing.is_ok());
  CHECK(nothing->now.delayed == 0);
  CHECK(nothing->per_minute.size() == 60);

  auto all = all_topic_stats(*store, {"registered", "t"});
  REQUIRE(all.is_ok());
  REQUIRE(all->size() == 3);  // sorted: registered, t, u
  CHECK((*all)[0].topic == "registered");
  CHECK((*all)[0].now.delayed == 0);
  CHECK((*all)[1].topic == "t");
  CHECK((*all)[1].now.delayed == 5);
  CHECK((*all)[1].total.added == 15);
  CHECK((*all)[1].per_day.empty());
  CHECK((*all)[2].topic == "u");
  CHECK((*all)[2].now.delayed == 5);

  auto all_series = all_topic_stats(*store, {}, /*with_series=*/true);
  REQUIRE(all_series.is_ok());
  const TopicStats* t = find(*all_series, "t");
  REQUIRE(t != nullptr);
  REQUIRE(t->per_minute.size() == 60);
  CHECK(t->per_minute.back().second.added == 3);
  CHECK(t->per_day.back().second.added == 9);
  const TopicStats* u = find(*all_series, "u");
  REQUIRE(u != nullptr);
  CHECK(u->per_minute.size() == 60);
  CHECK(u->per_day.size() == 30);

  b.kill9();
  auto partial = topic_stats(*store, "t");
  REQUIRE(partial.is_ok());
  CHECK(partial->unreachable_shards == std::vector<std::string>{b.address()});
  CHECK(partial->now.delayed == 3);
  CHECK(partial->total.added == 10);
  CHECK(partial->per_minute.back().second.added == 2);
  CHECK(to_json(*partial)["unreachable_shards"][0] == b.address());
  auto partial_all = all_topic_stats(*store, {});
  REQUIRE(partial_all.is_ok());
  CHECK(find(*partial_all, "t")->unreachable_shards.size() == 1);

  a.kill9();
  auto none = topic_stats(*store, "t");
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.status().code() == Code::kUnavailable);
}

TEST_CASE("listing: next due first over two shards, paged, one state, a dead shard named") {
  TestRedis a, b;
  auto store = store_over({&a, &b});
  // Delayed jobs due at 100, 200, ... alternating shards, mixed with another
  // topic and with retrying jobs in the same set.
  for (int i = 1; i <= 10; ++i) {
    TestRedis& shard = i % 2 ? a : b;
    put_delayed(shard, "t", "d" + std::to_string(i), 'd', int64_t{i} * 100);
    put_delayed(shard, "other", "o" + std::to_string(i), 'd', i * 100 + 1);
  }
  put_delayed(b, "t", "y1", 'y', 150);
  put_delayed(a, "t", "y2", 'y', 50);
  hset(b, keys::errors(), "t:y1", "1234|HTTP 500");
  hset(a, keys::counts(), "t:d", "5");
  hset(b, keys::counts(), "t:d", "5");
  hset(a, keys::counts(), "t:y", "1");
  hset(b, keys::counts(), "t:y", "1");
  // A bucket indexed whose job was deleted meanwhile.
  a.command({"ZADD", keys::due_index(), "LT", "60", std::to_string(keys::bucket_of("t:gone"))});

  auto first = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 4);
  REQUIRE(first.is_ok());
  CHECK(ids_of(*first) == std::vector<std::string>{"d1", "d2", "d3", "d4"});
  CHECK(first->total == 10);
  CHECK_FALSE(first->truncated);
  CHECK(first->jobs[0].shard == a.address());
  CHECK(first->jobs[1].shard == b.address());
  CHECK(first->jobs[0].state == "delayed");
  CHECK(first->jobs[0].due_ms == 100);
  CHECK(first->jobs[0].created_ms == 1000);

  auto second = list_topic_jobs(*store, "t", ListState::kDelayed, 4, 4);
  REQUIRE(second.is_ok());
  CHECK(ids_of(*second) == std::vector<std::string>{"d5", "d6", "d7", "d8"});
  auto last = list_topic_jobs(*store, "t", ListState::kDelayed, 8, 4);
  REQUIRE(last.is_ok());
  CHECK(ids_of(*last) == std::vector<std::string>{"d9", "d10"});
  auto past = list_topic_jobs(*store, "t", ListState::kDelayed, 20, 4);
  REQUIRE(past.is_ok());
  CHECK(past->jobs.empty());

  auto retrying = list_topic_jobs(*store, "t", ListState::kRetrying, 0, 10);
  REQUIRE(retrying.is_ok());
  CHECK(ids_of(*retrying) == std::vector<std::string>{"y2", "y1"});
  CHECK(retrying->total == 2);
  CHECK(retrying->jobs[1].last_error == "HTTP 500");
  CHECK(retrying->jobs[1].last_error_ms == 1234);
  Json json = to_json(*retrying);
  CHECK(json["jobs"][1]["last_error"] == "HTTP 500");
  CHECK(json["jobs"][1]["due_at_ms"] == 150);
  CHECK_FALSE(json["jobs"][0].contains("last_error"));

  CHECK(list_topic_jobs(*store, "t", ListState::kDelayed, -1, 4).status().code() == Code::kInvalid);
  CHECK(list_topic_jobs(*store, "t", ListState::kDelayed, 0, 0).status().code() == Code::kInvalid);
  CHECK(list_topic_jobs(*store, "t", ListState::kDelayed, 0, 501).status().code() ==
        Code::kInvalid);
  CHECK(list_topic_jobs(*store, "t", ListState::kDelayed, 0, 500).is_ok());
  CHECK(parse_list_state("working") == ListState::kWorking);
  CHECK_FALSE(parse_list_state("dead").has_value());
  CHECK_FALSE(parse_list_state("").has_value());

  b.kill9();
  auto partial = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 3);
  REQUIRE(partial.is_ok());
  CHECK(ids_of(*partial) == std::vector<std::string>{"d1", "d3", "d5"});
  CHECK(partial->total == 5);
  CHECK(partial->unreachable_shards == std::vector<std::string>{b.address()});
  a.kill9();
  CHECK(list_topic_jobs(*store, "t", ListState::kDelayed, 0, 3).status().code() ==
        Code::kUnavailable);
}

TEST_CASE("listing: ready keeps queue order, working by lease deadline") {
  TestRedis a, b;
  auto store = store_over({&a, &b});
  // Shard a's queue: r3 (requeued, due earlier) after r1; shard b holds r2.
  put_job(a, "t", "r1", 'r', 100);
  put_job(a, "t", "r3", 'r', 50);
  put_job(b, "t", "r2", 'r', 80);
  a.command({"RPUSH", keys::ready("t"), "t:r1", "t:r3"});
  b.command({"RPUSH", keys::ready("t"), "t:r2"});
  auto ready = list_topic_jobs(*store, "t", ListState::kReady, 0, 10);
  REQUIRE(ready.is_ok());
  CHECK(ids_of(*ready) == std::vector<std::string>{"r2", "r1", "r3"});
  auto paged = list_topic_jobs(*store, "t", ListState::kReady, 1, 1);
  REQUIRE(paged.is_ok());
  CHECK(ids_of(*paged) == std::vector<std::string>{"r1"});

  put_job(a, "t", "w1", 'w', 10, 1);
  put_job(b, "t", "w2", 'w', 20, 2);
  put_job(b, "other", "w3", 'w', 20, 1);
  a.command({"ZADD", keys::working(), "9000", "t:w1"});
  b.command({"ZADD", keys::working(), "8000", "t:w2", "8500", "other:w3"});
  auto working = list_topic_jobs(*store, "t", ListState::kWorking, 0, 10);
  REQUIRE(working.is_ok());
  CHECK(ids_of(*working) == std::vector<std::string>{"w2", "w1"});
  CHECK(working->jobs[0].lease_deadline_ms == 8000);
  CHECK(working->jobs[0].attempts == 2);
  CHECK(to_json(*working)["jobs"][0]["lease_deadline_ms"] == 8000);
}

TEST_CASE("listing: a search by id prefix over two shards counts every match, pages the earliest") {
  TestRedis a, b;
  auto store = store_over({&a, &b});
  // 1,500 matching delayed jobs (more than a search keeps in hand before it
  // trims: 2 x the page + 1,000), due in an order unrelated to their buckets,
  // beside 600 of other ids in the same topic and matching ids of another topic.
  std::map<int64_t, std::string> matching_by_due;
  for (int i = 0; i < 1500; ++i) {
    std::string id = "order-1" + std::to_string(10000 + i);
    int64_t due = 1000 + (int64_t{i} * 7919) % 100000;  // a permutation of 0..99999 steps
    put_delayed(i % 2 ? a : b, "t", id, 'd', due);
    matching_by_due[due] = id;
  }
  for (int i = 0; i < 600; ++i) {
    put_delayed(i % 2 ? b : a, "t", "user-" + std::to_string(i), 'd', i);  // due before every match
    put_delayed(a, "other", "order-1" + std::to_string(i), 'd', i);
  }
  hset(a, keys::counts(), "t:d", "1050");
  hset(b, keys::counts(), "t:d", "1050");

  auto page = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 5, "order-1");
  REQUIRE(page.is_ok());
  CHECK(page->total == 1500);  // the matches, not {dq}:counts
  CHECK_FALSE(page->truncated);
  std::vector<std::string> earliest;
  for (const auto& [due, id] : matching_by_due) {
    if (earliest.size() < 5) {
      earliest.push_back(id);
    }
  }
  CHECK(ids_of(*page) == earliest);
  auto deeper = list_topic_jobs(*store, "t", ListState::kDelayed, 1495, 10, "order-1");
  REQUIRE(deeper.is_ok());
  CHECK(deeper->jobs.size() == 5);
  CHECK(deeper->jobs.back().id == matching_by_due.rbegin()->second);
  auto narrow = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 50, "order-11000");
  REQUIRE(narrow.is_ok());
  CHECK(narrow->total == 10);  // order-110000 .. order-110009
  CHECK(narrow->jobs.size() == 10);
  auto none = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 50, "nobody");
  REQUIRE(none.is_ok());
  CHECK(none->total == 0);
  CHECK(none->jobs.empty());
  // Without a prefix the listing is as before: {dq}:counts.
  auto all = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 5);
  REQUIRE(all.is_ok());
  CHECK(all->total == 2100);
  CHECK(all->jobs.front().id == "user-0");

  // The ready list and the working set are searched the same way.
  put_job(a, "t", "order-r1", 'r', 100);
  put_job(a, "t", "user-r2", 'r', 90);
  put_job(b, "t", "order-r3", 'r', 80);
  a.command({"RPUSH", keys::ready("t"), "t:order-r1", "t:user-r2"});
  b.command({"RPUSH", keys::ready("t"), "t:order-r3"});
  auto ready = list_topic_jobs(*store, "t", ListState::kReady, 0, 10, "order-");
  REQUIRE(ready.is_ok());
  CHECK(ids_of(*ready) == std::vector<std::string>{"order-r3", "order-r1"});
  CHECK(ready->total == 2);
  put_job(a, "t", "order-w1", 'w', 10, 1);
  put_job(a, "t", "user-w2", 'w', 10, 1);
  a.command({"ZADD", keys::working(), "9000", "t:order-w1", "8000", "t:user-w2"});
  auto working = list_topic_jobs(*store, "t", ListState::kWorking, 0, 10, "order-");
  REQUIRE(working.is_ok());
  CHECK(ids_of(*working) == std::vector<std::string>{"order-w1"});
  CHECK(working->total == 1);

  // A bad prefix is refused and reads nothing.
  CHECK(list_topic_jobs(*store, "t", ListState::kDelayed, 0, 5, std::string(257, 'x'))
            .status()
            .code() == Code::kInvalid);
  CHECK(list_topic_jobs(*store, "t", ListState::kDelayed, 0, 5, "a\nb").status().code() ==
        Code::kInvalid);
}

TEST_CASE("listing: truncated when the cap is reached before the page is full") {
  TestRedis a;
  auto store = store_over({&a});
  // More than kMaxExaminedPerShard delayed jobs of another topic, spread over
  // every bucket (each indexed at its earliest due); the cap is checked
  // between rounds of buckets, so by a margin.
  a.command({"EVAL",
             ("for i = 1, tonumber(ARGV[1]) do local b = i % 49157 "
              "redis.call('HSET', KEYS[1] .. b, 'other:' .. i, 'd|0|' .. i .. '|1000|1||') "
              "redis.call('ZADD', KEYS[2], 'LT', i, b) end"),
             "2", keys::records_prefix(), keys::due_index(),
             std::to_string(kMaxExaminedPerShard + 40000)});
  put_delayed(a, "t", "late", 'd', kMaxExaminedPerShard + 10);
  put_delayed(a, "t", "early", 'd', 0);
  auto page = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 10);
  REQUIRE(page.is_ok());
  REQUIRE_FALSE(page->jobs.empty());
  CHECK(page->jobs.front().id == "early");
  CHECK(page->jobs.size() <= 2);
  CHECK(page->truncated);
  // A full page within the cap is not truncated.
  auto full = list_topic_jobs(*store, "t", ListState::kDelayed, 0, 1);
  REQUIRE(full.is_ok());
  CHECK(ids_of(*full) == std::vector<std::string>{"early"});
  CHECK_FALSE(full->truncated);
}

TEST_CASE("the counters the scripts write: add, promote, reserve, fail") {
  TestRedis redis;
  auto store = store_over({&redis});
  for (int i = 0; i < 3; ++i) {
    REQUIRE(store->add("flow", "later" + std::to_string(i), "{}", {true, 600000}).is_ok());
  }
  REQUIRE(store->add("flow", "now1", "{}", {true, 0}).is_ok());
  REQUIRE(store->add("flow", "now2", "{}", {true, 0}).is_ok());
  REQUIRE(store->promote(0, 100)->moved == 2);
  auto batch = store->reserve(0, "r1", {{"flow", 30000, 1, 1, 5}}, 1, 1 << 20);
  REQUIRE(batch.is_ok());
  REQUIRE(batch->jobs.size() == 1);
  const ReservedJob& leased = batch->jobs.front();
  auto working = list_topic_jobs(*store, "flow", ListState::kWorking, 0, 10);
  REQUIRE(working.is_ok());
  CHECK(ids_of(*working) == std::vector<std::string>{leased.job.id});
  REQUIRE(*store->fail(0, "flow", leased.job.id, leased.lease, 60000, 5, "HTTP 503") ==
          FailOutcome::kRescheduled);

  auto stats = topic_stats(*store, "flow");
  REQUIRE(stats.is_ok());
  CHECK(stats->now.delayed == 3);
  CHECK(stats->now.ready == 1);
  CHECK(stats->now.working == 0);
  CHECK(stats->now.retrying == 1);
  CHECK(stats->total.added == 5);
  CHECK(stats->total.failed == 1);
  CHECK(stats->per_day.back().second.added == 5);
  int64_t minute_adds = 0;
  for (const auto& [m, counts] : stats->per_minute) {
    minute_adds += counts.added;
  }
  CHECK(minute_adds == 5);

  auto delayed = list_topic_jobs(*store, "flow", ListState::kDelayed, 0, 10);
  REQUIRE(delayed.is_ok());
  CHECK(delayed->total == 3);
  CHECK(delayed->jobs.size() == 3);
  auto ready = list_topic_jobs(*store, "flow", ListState::kReady, 0, 10);
  REQUIRE(ready.is_ok());
  CHECK(ready->jobs.size() == 1);
  CHECK(ready->total == 1);
  auto retrying = list_topic_jobs(*store, "flow", ListState::kRetrying, 0, 10);
  REQUIRE(retrying.is_ok());
  REQUIRE(retrying->jobs.size() == 1);
  CHECK(retrying->jobs[0].id == leased.job.id);
  CHECK(retrying->jobs[0].attempts == 1);
  CHECK(retrying->jobs[0].last_error.find("HTTP 503") != std::string::npos);
}

// Adds, gets and deletes through BlockingJobStore, which waits on the one
// implementation the API server runs (AsyncJobStore): retries, conflicts,
// bodies stored apart and byte-exact, and one add.lua call of many jobs.
#include <doctest/doctest.h>
#include <signal.h>

#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

// ====================================================================== harness

TEST_CASE("harness: stop and restart keep the data, binary-safe commands") {
  TestRedis redis;
  redis.command({"SET", "k", std::string("a\0b", 3)});
  std::string before = redis.dump_all();
  CHECK(before.find("k (string)") != std::string::npos);
  redis.stop();
  CHECK_FALSE(redis.running());
  restart(redis);
  CHECK(redis.running());
  CHECK(redis.dump_all() == before);
  auto got = redis.command({"GET", "k"});
  CHECK(std::string(got->str, got->len) == std::string("a\0b", 3));
}

// ====================================================================== add / get / del

TEST_CASE("add, get, del round trip; times come from Redis") {
  TestRedis redis;
  auto store = store_over({&redis});
  std::string body = "{\"n\":1,\"text\":\"a|b|c\"}";
  int64_t before = redis_time_ms(redis);
  auto added = store->add("orders", "42", body, in_ms(60000));
  int64_t after = redis_time_ms(redis);
  REQUIRE(added.is_ok());
  CHECK_FALSE(added->existing);
  CHECK(added->due_ms >= before + 60000);
  CHECK(added->due_ms <= after + 60000);

  auto job = store->get("orders", "42");
  REQUIRE(job.is_ok());
  CHECK(job->topic == "orders");
  CHECK(job->id == "42");
  CHECK(job->body == body);
  CHECK(job->state == JobState::kDelayed);
  CHECK(job->attempts == 0);
  CHECK(job->due_at_ms == added->due_ms);
  CHECK(job->created_at_ms >= before);
  CHECK(job->created_at_ms <= after);
  CHECK(job->last_error.empty());
  CHECK_FALSE(job->incarnation.empty());
  check_consistent(redis);

  CHECK(store->get("orders", "43").status().code() == Code::kNotFound);
  CHECK(store->del("orders", "42").is_ok());
  CHECK(store->get("orders", "42").status().code() == Code::kNotFound);
  CHECK(store->del("orders", "42").code() == Code::kNotFound);
  CHECK(delayed_count(redis) == 0);
  CHECK(record_count(redis) == 0);
  CHECK(integer(redis, {"EXISTS", keys::bodies()}) == 0);
  check_consistent(redis);
}

TEST_CASE("an absolute due time is stored as given; one in the past is due at Redis's now") {
  TestRedis redis;
  auto store = store_over({&redis});
  int64_t due = redis_time_ms(redis) + 123456;
  auto added = store->add("t", "1", "{}", at_ms(due));
  REQUIRE(added.is_ok());
  CHECK(added->due_ms == due);
  CHECK(store->get("t", "1")->due_at_ms == due);
  CHECK(due_bound_of(redis, "t:1") == due);  // the only job of its bucket

  int64_t before = redis_time_ms(redis);
  auto past = store->add("t", "2", "{}", at_ms(before - 60000));
  REQUIRE(past.is_ok());
  CHECK(past->due_ms >= before);
  CHECK(past->due_ms <= redis_time_ms(redis));
  CHECK(store->get("t", "2")->due_at_ms == past->due_ms);
}

TEST_CASE("a retried add (same id, same body) is answered as existing and changes nothing") {
  TestRedis redis;
  auto store = store_over({&redis});
  auto first = store->add("orders", "42", "{\"v\":1}", in_ms(60000));
  REQUIRE(first.is_ok());
  std::string before = redis.dump_all();

  auto again = store->add("orders", "42", "{\"v\":1}", in_ms(1000));
  REQUIRE(again.is_ok());
  CHECK(again->existing);
  CHECK(again->due_ms == first->due_ms);  // the first add's due, not the retry's
  CHECK(redis.dump_all() == before);
  CHECK(record_count(redis) == 1);
  CHECK(delayed_count(redis) == 1);
  CHECK(stat(redis, "orders:added") == 1);

  // Same id in another topic is another job.
  auto other = store->add("payments", "42", "{\"v\":1}", kNow);
  REQUIRE(other.is_ok());
  CHECK_FALSE(other->existing);
  CHECK(record_count(redis) == 2);
}

TEST_CASE("a retried add of a job already ready or working is existing too") {
  TestRedis redis;
  auto store = store_over({&redis});
  auto first = store->add("t", "1", "{}", kNow);
  REQUIRE(first.is_ok());
  REQUIRE(store->promote(0, 100)->moved == 1);
  auto ready = store->add("t", "1", "{}", kNow);
  REQUIRE(ready.is_ok());
  CHECK(ready->existing);
  CHECK(ready->due_ms == first->due_ms);
  CHECK(llen(redis, keys::ready("t")) == 1);
  reserve_one(*store, "t", 30000, "r1");
  std::string before = redis.dump_all();
  auto working = store->add("t", "1", "{}", kNow);
  REQUIRE(working.is_ok());
  CHECK(working->existing);
  CHECK(redis.dump_all() == before);
}

TEST_CASE("an add with another body is a conflict and changes nothing") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("orders", "42", "{\"v\":1}", in_ms(60000)).is_ok());
  std::string before = redis.dump_all();
  auto again = store->add("orders", "42", "{\"v\":2}", in_ms(1000));
  CHECK(again.status().code() == Code::kConflict);
  CHECK(again.status().message() == "job orders/42 is already pending (delayed) with another body");
  CHECK(redis.dump_all() == before);
  CHECK(store->get("orders", "42")->body == "{\"v\":1}");
}

TEST_CASE("re-adding a dead job is a conflict that names the dead-letter set, same body or not") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  ReservedJob job = reserve_one(*store, "t", 30000, "r1");
  REQUIRE(*store->fail(0, "t", "1", job.lease, 1000, 1, "boom") == FailOutcome::kDead);
  std::string before = redis.dump_all();
  for (const char* body : {"{}", "{\"other\":1}"}) {
    auto again = store->add("t", "1", body, kNow);
    CHECK(again.status().code() == Code::kConflict);
    CHECK(again.status().message().find("dead-letter") != std::string::npos);
    CHECK(again.status().message() ==
          "job t/1 is in the dead-letter set; requeue or purge it first");
  }
  CHECK(redis.dump_all() == before);
}

TEST_CASE("the function library is loaded again after FUNCTION FLUSH") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "1", "{}", kNow).is_ok());
  redis.command({"FUNCTION", "FLUSH"});
  CHECK(store->add("t", "2", "{}", kNow).is_ok());
  CHECK(store->get("t", "2").is_ok());
}

// ====================================================================== bodies

TEST_CASE("a big body is stored once, apart from the record, and no state change rewrites it") {
  TestRedis redis;
  auto store = store_over({&redis});
  BodyWatch watch(redis);
  const std::string body =
      "{\"marker\":\"BODY-MARKER-7f3a\",\"pad\":\"" + std::string(kInlineBodyBytes, 'p') + "\"}";
  REQUIRE(store->add("t", "1", body, kNow).is_ok());
  CHECK(watch.events() == std::vector<std::string>{"hset"});
  CHECK(hget(redis, keys::bodies(), "t:1") == body);
  auto record = record_of(redis, "t:1");
  REQUIRE(record.has_value());
  CHECK(record->find("BODY-MARKER") == std::string::npos);
  Job parsed;
  CHECK(parse_job_meta(*record, &parsed));

  REQUIRE(store->promote(0, 100)->moved == 1);
  ReservedJob first = reserve_one(*store, "t", 30000, "r1");
  CHECK(first.job.body == body);
  REQUIRE(*store->fail(0, "t", "1", first.lease, 0, 5, "err") == FailOutcome::kRescheduled);
  ReservedJob second = reserve_one(*store, "t", 30000, "r2");
  CHECK(store->release(0, "r2").value() == 1);
  ReservedJob third = reserve_one(*store, "t", 50, "r3");
  sleep_ms(120);
  REQUIRE(store->requeue_expired(0, 100)->requeued == 1);
  CHECK(store->get("t", "1")->body == body);
  // promote, reserve, fail, release and requeue_expired never touched it.
  CHECK(watch.events().empty());
  CHECK(hget(redis, keys::bodies(), "t:1") == body);
  CHECK(record_of(redis, "t:1")->find("BODY-MARKER") == std::string::npos);

  REQUIRE(ack(*store, 0, "t", "1", third.lease).is_ok());
  CHECK(watch.events() == std::vector<std::string>{"hdel", "del"});  // removed with the job
}

TEST_CASE(
    "a small body is stored inline in its record, up to the limit, and every transition keeps it") {
  TestRedis redis;
  auto store = store_over({&redis});
  BodyWatch watch(redis);
  // Bytes a record's own syntax uses ('|', '\n') inside the body.
  std::string small = "{\"a\":\"x|y\\n\",\"b\":1}\n|";
  small += std::string(kInlineBodyBytes - small.size(), 'i');
  const std::string big = small + "j";  // one byte over: apart
  REQUIRE(store->add("t", "small", small, kNow).is_ok());
  REQUIRE(store->add("t", "big", big, kNow).is_ok());
  CHECK(watch.events() == std::vector<std::string>{"hset"});  // the big one only
  CHECK_FALSE(hget(redis, keys::bodies(), "t:small").has_value());
  CHECK(hget(redis, keys::bodies(), "t:big") == big);
  CHECK(body_is_inline(*record_of(redis, "t:small")));
  CHECK_FALSE(body_is_inline(*record_of(redis, "t:big")));
  CHECK(store->get("t", "small")->body == small);
  CHECK(store->add("t", "small", small, kNow)->existing);  // a retried add
  CHECK(store->add("t", "small", small + " ", kNow).status().code() == Code::kConflict);
  check_consistent(redis);

  // Through promote, reserve, fail, release, requeue_expired, dead, requeue.
  REQUIRE(store->promote(0, 100)->moved == 2);
  ReservedJob first = reserve_one(*store, "t", 30000, "r1");
  ReservedJob other = reserve_one(*store, "t", 30000, "r1b");
  CHECK(std::set<std::string>{first.job.body, other.job.body} == std::set<std::string>{small, big});
  const Lease small_lease = first.job.id == "small" ? first.lease : other.lease;
  REQUIRE(*store->fail(0, "t", "small", small_lease, 0, 5, "err") == FailOutcome::kRescheduled);
  check_consistent(redis);
  ReservedJob second = reserve_one(*store, "t", 30000, "r2");
  CHECK(second.job.body == small);
  CHECK(store->release(0, "r2").value() == 1);
  ReservedJob third = reserve_one(*store, "t", 50, "r3");
  CHECK(third.job.body == small);
  sleep_ms(120);
  REQUIRE(store->requeue_expired(0, 100)->requeued == 1);
  ReservedJob fourth = reserve_one(*store, "t", 30000, "r4");
  REQUIRE(*store->fail(0, "t", "small", fourth.lease, 0, 1, "x") == FailOutcome::kDead);
  auto dead = test::dead_list(*store, "t", 0, 10);
  REQUIRE(dead.is_ok());
  REQUIRE(dead->jobs.size() == 1);
  CHECK(dead->jobs[0].body == small);
  REQUIRE(*test::dead_requeue(*store, "t", "small") == 1);
  CHECK(store->get("t", "small")->body == small);
  check_consistent(redis);
  REQUIRE(store->promote(0, 100)->moved == 1);
  ReservedJob last = reserve_one(*store, "t", 30000, "r5");
  CHECK(last.job.body == small);
  REQUIRE(ack(*store, 0, "t", "small", last.lease).is_ok());
  CHECK(watch.events().empty());  // the small body never went to {dq}:bodies
  CHECK_FALSE(record_of(redis, "t:small").has_value());
  CHECK(store->del("t", "big").is_ok());
  CHECK(watch.events() == std::vector<std::string>{"hdel", "del"});
  CHECK(record_count(redis) == 0);
}

TEST_CASE(
    "a store v2 shard (one flat records hash, a zset of delayed jobs) is read and converted") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "new", "{}", kNow).is_ok());  // loads the scripts, sets the counts
  // What store v2 wrote: records in {dq}:jobs, bodies in {dq}:bodies, delayed
  // jobs in {dq}:delayed. One due now, one due later, one held by a lookup.
  const std::string body = "{\"old\":true}";
  const int64_t now = redis_time_ms(redis);
  auto put_v2 = [&](const std::string& id, int64_t due) {
    redis.command({"HSET", keys::flat_records(), "t:" + id,
                   "d|0|" + std::to_string(due) + "|1|9" + std::to_string(id.size()) + "||"});
    redis.command({"HSET", keys::bodies(), "t:" + id, body});
    redis.command({"ZADD", keys::flat_delayed(), std::to_string(due), "t:" + id});
    redis.command({"HINCRBY", keys::counts(), "t:d", "1"});
  };
  put_v2("old", now - 10);
  put_v2("later", now + 600000);
  put_v2("asked", now + 600000);
  // Reads and scripts find them where they are.
  CHECK(store->get("t", "old")->body == body);
  CHECK(store->add("t", "asked", body, kNow)->existing);
  CHECK(record_of(redis, "t:asked").has_value());
  CHECK(store->add("t", "old", "{}", kNow).status().code() == Code::kConflict);
  put_v2("deleted", now + 600000);  // deleted before it is converted: gone from both
  REQUIRE(store->del("t", "deleted").is_ok());
  CHECK_FALSE(zscore(redis, keys::flat_delayed(), "t:deleted").has_value());
  CHECK_FALSE(record_of(redis, "t:deleted").has_value());
  // The timer's first promote converts them into buckets (store_upgrade.lua,
  // once per shard), due jobs first, and promotes the due ones: the flat
  // hash keeps only those two, ready.
  REQUIRE(store->promote(0, 100)->moved == 2);
  CHECK(integer(redis, {"HLEN", keys::flat_records()}) == 2);
  CHECK(integer(redis, {"EXISTS", keys::flat_delayed()}) == 0);
  CHECK(text(redis.command({"GET", keys::kPrefix + "store_version"}).get()) == "3");
  CHECK(due_bound_of(redis, "t:later") <= now + 600000);
  check_consistent(redis);
  ReservedJob a = reserve_one(*store, "t", 30000, "r1");
  ReservedJob b = reserve_one(*store, "t", 30000, "r2");
  ReservedJob old = a.job.id == "old" ? a : b;
  CHECK(old.job.body == body);
  REQUIRE(ack(*store, 0, "t", "old", old.lease).is_ok());
  CHECK_FALSE(hget(redis, keys::bodies(), "t:old").has_value());  // removed with the job
  CHECK_FALSE(record_of(redis, "t:old").has_value());
  CHECK(store->get("t", "later")->body == body);
  check_consistent(redis);
}

TEST_CASE("body bytes round-trip exactly through add, get, reserve and dead_list") {
  TestRedis redis;
  auto store = store_over({&redis});
  std::string body;
  for (int round = 0; round < 3; ++round) {
    for (int c = 1; c < 256; ++c) {
      body.push_back(static_cast<char>(c));  // every byte but NUL
    }
  }
  body += "|x|y|1|2|3|||:::\r\n";
  REQUIRE(store->add("t", "bin", body, kNow).is_ok());
  CHECK(store->get("t", "bin")->body == body);
  ReservedJob job = reserve_one(*store, "t", 30000, "r1");
  CHECK(job.job.body == body);
  REQUIRE(*store->fail(0, "t", "bin", job.lease, 0, 1, "x") == FailOutcome::kDead);
  auto dead = test::dead_list(*store, "t", 0, 10);
  REQUIRE(dead.is_ok());
  REQUIRE(dead->jobs.size() == 1);
  CHECK(dead->jobs[0].body == body);
  // A retry with byte-identical body is the same job; one changed byte is not.
  REQUIRE(*test::dead_requeue(*store, "t", "bin") == 1);
  auto same = store->add("t", "bin", body, kNow);
  REQUIRE(same.is_ok());
  CHECK(same->existing);
  std::string changed = body;
  changed[200] ^= 1;
  CHECK(store->add("t", "bin", changed, kNow).status().code() == Code::kConflict);
}

// ====================================================================== add calls of many jobs

TEST_CASE("one add call stores many jobs: replies in order, an id twice, counters summed") {
  TestRedis redis;
  auto store = store_over({&redis});
  RedisConnection shard(redis.shard(), 1000, 2000);
  REQUIRE(store->add("m", "old", "{\"n\":0}", in_ms(60000)).is_ok());
  redis.command({"DEL", keys::timer_wake()});

  ScriptCall call = add_call_for("");
  append_add(&call, "m", "a", "{\"n\":1}", in_ms(60000));
  append_add(&call, "m", "b", "{\"n\":2}", in_ms(30000));  // the earliest of the call
  append_add(&call, "m", "a", "{\"n\":1}", in_ms(5));      // again, same body: the first stands
  append_add(&call, "m", "b", "{\"n\":9}", in_ms(5));      // again, another body: a conflict
  append_add(&call, "m", "old", "{\"n\":0}", in_ms(5));    // held before the call: retried add
  append_add(&call, "o", "a", "{}", in_ms(90000));         // another topic, same id
  REQUIRE(add_call_jobs(call) == 6);
  auto reply = shard.run(call);
  REQUIRE(reply.is_ok());

  auto a = read_add_reply(reply->get(), 0, "m", "a");
  auto b = read_add_reply(reply->get(), 1, "m", "b");
  auto a_again = read_add_reply(reply->get(), 2, "m", "a");
  auto b_other = read_add_reply(reply->get(), 3, "m", "b");
  auto old_again = read_add_reply(reply->get(), 4, "m", "old");
  auto o = read_add_reply(reply->get(), 5, "o", "a");
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK_FALSE(a->existing);
  CHECK(b->due_ms < a->due_ms);
  REQUIRE(a_again.is_ok());
  CHECK(a_again->existing);
  CHECK(a_again->due_ms == a->due_ms);
  CHECK(b_other.status().code() == Code::kConflict);
  REQUIRE(old_again.is_ok());
  CHECK(old_again->existing);
  REQUIRE(o.is_ok());
  CHECK_FALSE(read_add_reply(reply->get(), 6, "m", "x").is_ok());  // no seventh job

  // Three new jobs stored, each its own incarnation, bodies as sent.
  CHECK(record_count(redis) == 4);
  CHECK(delayed_count(redis) == 4);
  std::set<std::string> incarnations;
  for (auto [topic, id] : {std::pair{"m", "old"}, {"m", "a"}, {"m", "b"}, {"o", "a"}}) {
    auto job = store->get(topic, id);
    REQUIRE(job.is_ok());
    incarnations.insert(job->incarnation);
  }
  CHECK(incarnations.size() == 4);
  CHECK(store->get("m", "b")->body == "{\"n\":2}");
  // Counters summed per topic, one wake token: the call's earliest due, which
  // is earlier than everything delayed before.
  CHECK(counts(redis) == std::map<std::string, int64_t>{{"m:d", 3}, {"o:d", 1}});
  CHECK(stat(redis, "m:added") == 3);
  CHECK(stat(redis, "o:added") == 1);
  auto wake = redis.command({"LRANGE", keys::timer_wake(), "0", "-1"});
  REQUIRE(wake->elements == 1);
  CHECK(text(wake->element[0]) == std::to_string(b->due_ms));
}

TEST_CASE("an add call whose next home fenced this shard writes nothing; an old name does not") {
  TestRedis redis;
  auto store = store_over({&redis});
  RedisConnection shard(redis.shard(), 1000, 2000);
  auto add_both = [&](const std::string& next_home) {
    ScriptCall call = add_call_for(next_home);
    append_add(&call, "m", "a", "{}", in_ms(60000));
    append_add(&call, "m", "b", "{}", in_ms(60000));
    auto reply = shard.run(call);
    REQUIRE(reply.is_ok());
    return std::vector<Result<Added>>{read_add_reply(reply->get(), 0, "m", "a"),
                                      read_add_reply(reply->get(), 1, "m", "b")};
  };
  // Not fenced: placed as usual, the next home named or not.
  for (const auto& added : add_both("far:1")) {
    CHECK(added.is_ok());
  }
  // A host that places these ids on far:2 looked here (fence_argv): a host
  // that still places them here is refused, nothing written (503).
  REQUIRE(shard.command(fence_argv({"far:2"})).is_ok());
  for (const auto& added : add_both("far:2")) {
    REQUIRE_FALSE(added.is_ok());
    CHECK(added.status().code() == Code::kUnavailable);
    CHECK(added.status().message().find("far:2") != std::string::npos);
    CHECK(added.status().message().find("nothing was written") != std::string::npos);
  }
  CHECK(counts(redis) == std::map<std::string, int64_t>{{"m:d", 2}});
  CHECK(stat(redis, "m:added") == 2);
  // Named longer ago than kFenceMs: the change is over, the fence holds no more.
  redis.command(
      {"ZADD", keys::fence(), std::to_string(redis_time_ms(redis) - kFenceMs - 1000), "far:3"});
  ScriptCall call = add_call_for("far:3");
  append_add(&call, "m", "c", "{}", in_ms(60000));
  auto reply = shard.run(call);
  REQUIRE(reply.is_ok());
  CHECK(read_add_reply(reply->get(), 0, "m", "c").is_ok());
  check_consistent(redis);
}

// Shards that go down, come back, join or drain, through BlockingJobStore
// (AsyncJobStore underneath): one home per id (common/store/placement.h),
// 503 naming the home when it cannot be asked, the previous or next home
// asked while the shard list changes, the fence, moves home
// (common/store/job_mover.h) with a crash at every step, AUTH, and a hung
// Redis whose outcome is unknown.
#include <doctest/doctest.h>
#include <signal.h>

#include "common/store/dependencies.h"
#include "common/store/job_mover.h"
#include "common/store/schedule_ticks.h"
#include "common/store/script_calls.h"
#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

// ====================================================================== one home

TEST_CASE("two shards: spread; one down: its ids are refused naming it, the others go on") {
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

  const std::string name_two = two.shard().name();
  two.stop();
  auto fresh = store_over({&one, &two});  // never connected to two
  // An add whose home is two is refused (503) naming it, nothing written
  // anywhere; the others are placed on one as usual.
  int refused = 0;
  std::vector<std::string> refused_ids;
  for (int i = 200; i < 240; ++i) {
    std::string id = "job-" + std::to_string(i);
    auto added = fresh->add("spread", id, "{}", in_ms(60000));
    bool homed_on_two = shard_order(store->addresses(), job_key("spread", id)).front() == 1;
    CHECK(refused_naming(added, name_two) == homed_on_two);
    CHECK(added.is_ok() != homed_on_two);
    if (homed_on_two) {
      refused_ids.push_back(id);
    }
    refused += homed_on_two;
  }
  CHECK(refused > 5);
  CHECK(record_count(one) == on_one + 40 - refused);

  std::string on_two_id, on_one_id;
  for (const auto& [id, shard] : home) {
    (shard == 1 ? on_two_id : on_one_id) = id;
  }
  // A get or delete whose home is down: 503 naming it, never 404.
  auto missing = fresh->get("spread", on_two_id);
  CHECK(missing.status().code() == Code::kUnavailable);
  CHECK(missing.status().message().find(name_two) != std::string::npos);
  std::string before_one = one.dump_all();
  Status deleted = fresh->del("spread", on_two_id);
  CHECK(deleted.code() == Code::kUnavailable);
  CHECK(deleted.message().find(name_two) != std::string::npos);
  CHECK(one.dump_all() == before_one);
  CHECK(fresh->get("spread", refused_ids[0]).status().code() == Code::kUnavailable);
  // Ids homed on one answer as usual, whatever two does.
  CHECK(fresh->get("spread", on_one_id).is_ok());
  std::string never_on_one = id_homed_on(*store, "spread", 0, "never-");
  CHECK(fresh->get("spread", never_on_one).status().code() == Code::kNotFound);
  CHECK(fresh->del("spread", never_on_one).code() == Code::kNotFound);
  CHECK(fresh->promote(1, 10).status().code() == Code::kUnavailable);

  // Back: the refused ids, added again, land on their home once.
  restart(two);
  auto found = fresh->get("spread", on_two_id);
  REQUIRE(found.is_ok());
  CHECK(found->state == JobState::kDelayed);
  for (const auto& id : refused_ids) {
    REQUIRE(fresh->add("spread", id, "{}", in_ms(60000)).is_ok());
    auto again = fresh->add("spread", id, "{}", kNow);
    REQUIRE(again.is_ok());
    CHECK(again->existing);
    CHECK(fresh->add("spread", id, "{\"x\":1}", kNow).status().code() == Code::kConflict);
  }
  CHECK(record_count(two) == on_two + static_cast<int64_t>(refused_ids.size()));
  CHECK(record_count(one) == on_one + 40 - refused);
  for (int i = 0; i < 240; ++i) {
    CHECK(fresh->get("spread", "job-" + std::to_string(i)).is_ok());
  }
  check_consistent(one);
  check_consistent(two);
}

TEST_CASE(
    "a home that died under an open connection: the add is unknown or refused, never placed "
    "elsewhere; once back, a retry is placed once") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  std::string id = id_homed_on(*store, "t", 1, "k");
  REQUIRE(store->add("t", "warm", "{}", kNow).is_ok());
  REQUIRE(store->get("t", id).status().code() == Code::kNotFound);  // connected to both
  int64_t on_one = record_count(one);
  two.stop();
  // The open connection still looks up, so the add may be sent and find it
  // closed: kUnknown (it may have run). Or the drop was seen: kUnavailable.
  // Never a copy on one.
  auto added = store->add("t", id, "{}", in_ms(60000));
  INFO(added.status().message());
  CHECK((added.status().code() == Code::kUnknown || added.status().code() == Code::kUnavailable));
  auto retry = store->add("t", id, "{}", in_ms(60000));
  CHECK(refused_naming(retry, two.shard().name()));
  CHECK(record_count(one) == on_one);
  restart(two);
  auto placed = store->add("t", id, "{}", in_ms(60000));
  REQUIRE(placed.is_ok());
  CHECK(record_of(two, "t:" + id).has_value());
  CHECK(record_count(one) == on_one);
}

TEST_CASE("a home that refuses writes (full): 503 naming it and Redis's reason, nothing written") {
  TestRedis one, two;
  auto store = store_over({&one, &two});
  std::string id = id_homed_on(*store, "t", 1, "full");
  REQUIRE(store->get("t", id).status().code() == Code::kNotFound);  // connected
  two.command({"CONFIG", "SET", "maxmemory", "1"});
  auto added = store->add("t", id, "{}", in_ms(60000));
  CHECK(refused_naming(added, two.shard().name()));
  CHECK(added.status().message().find("OOM") != std::string::npos);
  CHECK(added.status().message().find("nothing was written") != std::string::npos);
  two.command({"CONFIG", "SET", "maxmemory", "0"});
  CHECK(record_count(one) == 0);
  CHECK(store->add("t", id, "{}", in_ms(60000)).is_ok());
}

TEST_CASE("no shard reachable: add is unavailable and writes nothing") {
  TestRedis one;
  auto store = store_over({&one});
  one.stop();
  auto added = store->add("t", "1", "{}", kNow);
  CHECK(refused_naming(added, one.shard().name()));
  CHECK(added.status().message().find("job t/1 not added") == 0);
  restart(one);
  CHECK(store->get("t", "1").status().code() == Code::kNotFound);
  CHECK(store->add("t", "1", "{}", kNow).is_ok());
}

// ====================================================================== a shard joins

TEST_CASE("homes while a shard joins, moves in and is active: at most two shards asked") {
  std::vector<ShardAddress> shards = {{"a", 1, ""}, {"b", 2, ""}, {"c", 3, ""}};
  using R = ShardRole;
  int previous = 0, next = 0;
  for (int i = 0; i < 300; ++i) {
    std::string key = job_key("t", std::to_string(i));
    auto order = shard_order(shards, key);
    auto settled = id_homes(shards, {R::kActive, R::kActive, R::kActive}, key);
    REQUIRE(settled);
    CHECK(settled->home == order[0]);
    CHECK(settled->asked().size() == 1);
    // c joins: no id is placed on it yet; an id it will be the home of asks it.
    auto joining = id_homes(shards, {R::kActive, R::kActive, R::kJoining}, key);
    size_t old_home = order[0] == 2 ? order[1] : order[0];
    CHECK(joining->home == old_home);
    CHECK(joining->next == (order[0] == 2 ? std::optional<size_t>(2) : std::nullopt));
    CHECK_FALSE(joining->previous);
    // c moves in: its ids are placed on it, their previous home asked too.
    auto moving = id_homes(shards, {R::kActive, R::kActive, R::kMovingIn}, key);
    CHECK(moving->home == order[0]);
    CHECK(moving->previous == (order[0] == 2 ? std::optional<size_t>(old_home) : std::nullopt));
    CHECK_FALSE(moving->next);
    // c drains: leaving (still placed on, the next home asked), then draining.
    auto leaving = id_homes(shards, {R::kActive, R::kActive, R::kLeaving}, key);
    CHECK(leaving->home == order[0]);
    CHECK(leaving->next == (order[0] == 2 ? std::optional<size_t>(old_home) : std::nullopt));
    auto draining = id_homes(shards, {R::kActive, R::kActive, R::kDraining}, key);
    CHECK(draining->home == old_home);
    CHECK(draining->previous == (order[0] == 2 ? std::optional<size_t>(2) : std::nullopt));
    auto drained = id_homes(shards, {R::kActive, R::kActive, R::kDrained}, key);
    CHECK(drained->home == old_home);
    CHECK(drained->asked().size() == 1);
    for (const auto& homes : {*joining, *moving, *leaving, *draining}) {
      CHECK(homes.asked().size() <= 2);
    }
    previous += moving->previous.has_value();
    next += joining->next.has_value();
  }
  CHECK(previous > 50);  // about a third of the ids
  CHECK(previous == next);
  // No shard takes new jobs: no home at all.
  CHECK_FALSE(id_homes(shards, {R::kDraining, R::kDrained, R::kJoining}, "t:1"));
}

TEST_CASE(
    "a shard moving in: its ids are found on their previous home, an add there fences it, "
    "and the mover brings each job home once") {
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
  using R = ShardRole;
  auto store = store_with_roles({&one, &two, &three}, {R::kActive, R::kActive, R::kMovingIn});
  const std::string name_three = three.shard().name();
  std::vector<std::string> homed_on_three;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& id = ids[i];
    if (shard_order(store->addresses(), job_key("grow", id)).front() == 2) {
      homed_on_three.push_back(id);
    }
    REQUIRE(store->get("grow", id).is_ok());
    CHECK(store->add("grow", id, "{}", kNow).status().code() == Code::kConflict);
    auto same = store->add("grow", id, "{\"i\":" + std::to_string(i) + "}", kNow);
    REQUIRE(same.is_ok());
    CHECK(same->existing);
  }
  CHECK(homed_on_three.size() > 20);  // some homes did move to the new shard
  CHECK(record_count(three) == 0);    // no second copy was made
  // Each add of an id homed on three looked at its previous home and fenced
  // it: a host that still places such an id there is refused.
  for (TestRedis* old : {&one, &two}) {
    CHECK(zscore(*old, keys::fence(), name_three).has_value());
  }
  // New ids homed on three go there.
  int new_on_three = 0;
  for (int i = 0; i < 60; ++i) {
    std::string id = "new" + std::to_string(i);
    REQUIRE(store->add("grow", id, "{}", in_ms(60000)).is_ok());
    new_on_three += record_of(three, job_key("grow", id)).has_value();
  }
  CHECK(new_on_three > 5);

  // The mover: each job of one and two whose home is three moves there.
  std::vector<std::string> names = shard_names(store->addresses());
  JobMover mover(*store, names);
  for (size_t source : {size_t{0}, size_t{1}}) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& id : homed_on_three) {
      pairs.emplace_back(job_key("grow", id), name_three);
    }
    mover.move(source, pairs);  // the ids the source does not hold are not marked
  }
  CHECK(record_count(three) == static_cast<int64_t>(homed_on_three.size()) + new_on_three);
  for (const auto& id : homed_on_three) {
    CHECK(record_of(three, job_key("grow", id)).has_value());
    CHECK_FALSE(record_of(one, job_key("grow", id)).has_value());
    CHECK_FALSE(record_of(two, job_key("grow", id)).has_value());
  }
  // Settled: only the home is asked, and finds every job.
  auto settled = store_over({&one, &two, &three});
  for (const auto& id : ids) {
    REQUIRE(settled->get("grow", id).is_ok());
  }
  for (const auto& id : ids) {
    CHECK(settled->del("grow", id).is_ok());
  }
  CHECK(record_count(one) + record_count(two) + record_count(three) == 60);
  for (TestRedis* each : {&one, &two, &three}) {
    check_consistent(*each);
  }
}

TEST_CASE(
    "a shard joining: asked about the ids it will be the home of, given none; its previous "
    "home down while it moves in: 503 naming it") {
  TestRedis one, two;
  using R = ShardRole;
  auto joining = store_with_roles({&one, &two}, {R::kActive, R::kJoining});
  std::string id = id_homed_on(*joining, "t", 1, "j");  // homed on two once it takes jobs
  REQUIRE(joining->add("t", id, "{}", in_ms(60000)).is_ok());
  CHECK(record_of(one, job_key("t", id)).has_value());  // not yet on two
  CHECK(record_count(two) == 0);
  // A host that already sees two moving in placed another id there: a
  // joining host finds it on two (its next home) and adds no second copy.
  auto moving = store_with_roles({&one, &two}, {R::kActive, R::kMovingIn});
  std::string other = id_homed_on(*joining, "t", 1, "m");
  REQUIRE(moving->add("t", other, "{\"v\":1}", in_ms(60000)).is_ok());
  CHECK(record_of(two, job_key("t", other)).has_value());
  auto same = joining->add("t", other, "{\"v\":1}", in_ms(60000));
  REQUIRE(same.is_ok());
  CHECK(same->existing);
  CHECK(joining->add("t", other, "{\"v\":2}", kNow).status().code() == Code::kConflict);
  CHECK(joining->get("t", other).is_ok());
  CHECK_FALSE(record_of(one, job_key("t", other)).has_value());
  // The moving host's look at one fenced it for two: a joining host's add of
  // an id homed on two is refused there now (it would make a second copy
  // if the moving host placed the same id on two meanwhile).
  std::string third = id_homed_on(*joining, "t", 1, "f");
  auto fenced = joining->add("t", third, "{}", in_ms(60000));
  CHECK(refused_naming(fenced, two.shard().name()));
  CHECK_FALSE(record_of(one, job_key("t", third)).has_value());
  // The previous home down while two moves in: its ids are refused, 503
  // naming it (it may hold them); a delete too, unless found on two.
  one.stop();
  auto without_one = store_with_roles({&one, &two}, {R::kActive, R::kMovingIn});
  CHECK(refused_naming(without_one->add("t", id, "{}", kNow), one.shard().name()));
  CHECK(without_one->get("t", id).status().code() == Code::kUnavailable);
  CHECK(without_one->get("t", other).is_ok());  // on two, its home
  CHECK(without_one->del("t", other).is_ok());
  CHECK(without_one->del("t", id).code() == Code::kUnavailable);
}

// ====================================================================== moves home

TEST_CASE(
    "moves home survive a crash after each step, a delete during the move, and keep due "
    "times") {
  TestRedis source, target;
  auto store = store_over({&source, &target});
  std::vector<std::string> names = shard_names(store->addresses());
  RedisConnection from(source.shard(), 1000, 2000);
  RedisConnection to(target.shard(), 1000, 2000);
  std::map<std::string, int64_t> due;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (int i = 0; i < 40; ++i) {
    std::string id = id_homed_on(*store, "mv", 0, "m" + std::to_string(i) + "-");
    auto added = store->add("mv", id, "{\"i\":" + std::to_string(i) + "}", in_ms(60000 + i));
    REQUIRE(added.is_ok());
    due[job_key("mv", id)] = added->due_ms;
    pairs.emplace_back(job_key("mv", id), names[1]);
  }
  // A job due within kMoveMarginMs is not marked: delivered where it is.
  std::string soon = id_homed_on(*store, "mv", 0, "soon-");
  REQUIRE(store->add("mv", soon, "{}", in_ms(1000)).is_ok());
  pairs.emplace_back(job_key("mv", soon), names[1]);
  auto marked = from.run(move_mark_call(pairs, kMoveMarginMs));
  REQUIRE(marked.is_ok());
  CHECK((*marked)->elements == 9 * 40);
  // Crash 1: marked only. The source no longer delivers them; gets still find them.
  CHECK(delayed_count(source) == 41);  // records stay
  CHECK(store->promote(0, 100)->moved == 0);
  // Crash 2: ten written on the target too (their source copies remain).
  std::vector<MarkedJob> jobs = marked_jobs_of(marked->get());
  jobs.resize(10);
  std::vector<const MarkedJob*> list;
  for (const auto& job : jobs) list.push_back(&job);
  REQUIRE(to.run(move_in_call(list)).is_ok());
  // Deletes during the move: one only marked, one written on both.
  std::string deleted_marked = pairs[20].first;
  std::string deleted_both = pairs[3].first;
  for (const auto& key : {deleted_marked, deleted_both}) {
    std::string topic, id;
    REQUIRE(split_job_key(key, &topic, &id));
    REQUIRE(store->del(topic, id).is_ok());  // the source is the home: deleted there
  }
  // A new mover finishes: each job moved once, due time kept, the deleted
  // ones nowhere.
  JobMover mover(*store, names);
  auto left = mover.marked(0, 1000);
  CHECK(left.size() == 40);
  CHECK(mover.move(0, left) == 40);
  CHECK(mover.marked(0, 1000).empty());
  CHECK(record_count(source) == 1);  // the one due soon
  CHECK(record_of(source, job_key("mv", soon)).has_value());
  CHECK(record_count(target) == 38);
  for (const auto& [key, ms] : due) {
    auto record = record_of(target, key);
    if (key == deleted_marked || key == deleted_both) {
      CHECK_FALSE(record.has_value());
      continue;
    }
    REQUIRE(record.has_value());
    Job job;
    REQUIRE(parse_job_meta(*record, &job));
    CHECK(job.due_at_ms == ms);
    CHECK(job.state == JobState::kDelayed);
  }
  CHECK(text(source.command({"GET", keys::moved_out()}).get()) == "38");
  check_consistent(source);
  check_consistent(target);
  // Moving again changes nothing.
  CHECK(mover.move(0, pairs) == 0);
  CHECK(record_count(target) == 38);
}

TEST_CASE(
    "a waiting job being moved is neither released nor run now until its move ends; its waits "
    "and the waits on a moved job go with it") {
  TestRedis source, target;
  auto store = store_over({&source, &target});
  std::vector<std::string> names = shard_names(store->addresses());
  RedisConnection from(source.shard(), 1000, 2000);
  RedisConnection to(target.shard(), 1000, 2000);
  // A (delayed, a minute off) and B waiting for it, both on the source;
  // C waits for A too, registered on the source: A's waiters.
  std::string a = id_homed_on(*store, "w", 0, "a-");
  std::string b = id_homed_on(*store, "w", 0, "b-");
  REQUIRE(store->add("w", a, "{}", in_ms(60000)).is_ok());
  REQUIRE(from.run(dep_register_call(job_key("w", "c"), {job_key("w", a)})).is_ok());
  REQUIRE(from.run(dep_register_call(job_key("w", b), {job_key("w", a)})).is_ok());
  ScriptCall add_b = add_call_for("");
  append_add(&add_b, "w", b, "{}", in_ms(0), {}, job_key("w", a));
  REQUIRE(from.run(add_b).is_ok());
  // Both marked for the target, as a mover that died after its mark leaves them.
  auto marked = from.run(
      move_mark_call({{job_key("w", a), names[1]}, {job_key("w", b), names[1]}}, kMoveMarginMs));
  REQUIRE(marked.is_ok());
  auto jobs = marked_jobs_of(marked->get());
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].waiters.size() == std::string(job_key("w", "c") + "\n" + job_key("w", b)).size());
  CHECK(jobs[1].after == job_key("w", a));
  // While marked: a release changes nothing ("moving": asked again), nor does run now.
  DepEvent ended{"1", 'a', 0, job_key("w", a), "", {job_key("w", b)}};
  auto released = release_waiter(from, ended, job_key("w", b), WaiterPolicy{});
  REQUIRE(released.is_ok());
  CHECK(*released == "moving");
  CHECK(store->run_now("w", b).status().code() == Code::kUnavailable);
  // The mover finishes: B waits on the target for A; A's waiters are
  // registered there, so A's end there releases B.
  JobMover mover(*store, names);
  CHECK(mover.move(0, mover.marked(0, 10)) == 2);
  CHECK_FALSE(record_of(source, job_key("w", b)).has_value());
  CHECK(source.command({"HLEN", keys::after()})->integer == 0);
  CHECK(text(target.command({"HGET", keys::after(), job_key("w", b)}).get()) == job_key("w", a));
  CHECK(target.command({"SISMEMBER", keys::awaited(), job_key("w", a)})->integer == 1);
  CHECK(target.command({"SCARD", "{dq}:waiters:" + job_key("w", a)})->integer == 2);
  auto record = record_of(target, job_key("w", b));
  REQUIRE(record.has_value());
  CHECK(record->rfind("b|", 0) == 0);
  released = release_waiter(to, ended, job_key("w", b), WaiterPolicy{});
  REQUIRE(released.is_ok());
  CHECK(*released == "released");
  check_consistent(source);
  check_consistent(target);

  // On a shard that is only its previous or next home, a job is registered
  // as waited for only while it is there: its home holds the registration.
  std::string absent = job_key("w", "never-added");
  REQUIRE(from.run(dep_register_call(job_key("w", "d"), {}, {absent})).is_ok());
  CHECK(source.command({"SISMEMBER", keys::awaited(), absent})->integer == 0);
  std::string here = id_homed_on(*store, "w", 0, "here-");
  REQUIRE(store->add("w", here, "{}", in_ms(60000)).is_ok());
  REQUIRE(from.run(dep_register_call(job_key("w", "d"), {}, {job_key("w", here)})).is_ok());
  CHECK(source.command({"SISMEMBER", keys::awaited(), job_key("w", here)})->integer == 1);
  // A move the target refuses (it holds another job of the id) registers
  // nothing there: the waiters stay with their own job.
  REQUIRE(to.run(dep_register_call(job_key("w", "e"), {job_key("w", here)})).is_ok());
  ScriptCall other = add_call_for("");
  append_add(&other, "w", here, "{\"other\":1}", in_ms(60000));
  REQUIRE(to.run(other).is_ok());
  REQUIRE((*to.command({"SREM", keys::awaited(), job_key("w", here)}))->integer == 1);
  CHECK(mover.move(0, {{job_key("w", here), names[1]}}) == 0);  // undone
  CHECK(target.command({"SISMEMBER", keys::awaited(), job_key("w", here)})->integer == 0);
  CHECK(record_of(source, job_key("w", here)).has_value());
}

TEST_CASE("a schedule's next tick carried to its home keeps the later of the two") {
  TestRedis redis;
  RedisConnection shard(redis.shard(), 1000, 2000);
  const std::string key = keys::schedule_next("s1");
  auto carried = shard.run(schedule_carry_in_call("s1", "2000"));
  REQUIRE(carried.is_ok());
  CHECK(text(carried->get()) == "2000");  // none here: written
  CHECK(text(shard.run(schedule_carry_in_call("s1", "1000"))->get()) == "2000");  // older: kept
  CHECK(text(shard.run(schedule_carry_in_call("s1", "3000"))->get()) == "3000");  // later: raised
  CHECK(text(redis.command({"GET", key}).get()) == "3000");
  // The carried key leaves its old shard only while it is what was carried.
  CHECK((*shard.run(schedule_carry_done_call("s1", "2999")))->integer == 0);
  CHECK(redis.command({"EXISTS", key})->integer == 1);
  CHECK((*shard.run(schedule_carry_done_call("s1", "3000")))->integer == 1);
  CHECK(redis.command({"EXISTS", key})->integer == 0);
}

TEST_CASE("an ended record carried to its home keeps the later end, and leaves only if unchanged") {
  TestRedis from_redis, to_redis;
  RedisConnection from(from_redis.shard(), 1000, 2000), to(to_redis.shard(), 1000, 2000);
  const std::string a = job_key("t", "a"), b = job_key("t", "b"), c = job_key("t", "c");
  from_redis.command({"SET", keys::ended(a), "a|2000|1500|abcd|0|1|", "PX", "600000"});
  from_redis.command({"SET", keys::ended(b), "a|1000|900|abcd|0|1|"});  // no TTL
  // Out: a triple per record found (c has none), its TTL in ms or ''.
  auto out = from.run(ended_carry_out_call({a, b, c}));
  REQUIRE(out.is_ok());
  REQUIRE((*out)->elements == 6);
  std::vector<std::string> triples;
  for (size_t i = 0; i < 6; ++i) {
    triples.push_back(text((*out)->element[i]));
  }
  CHECK(triples[0] == a);
  CHECK(triples[1] == "a|2000|1500|abcd|0|1|");
  CHECK(std::stoll(triples[2]) > 590000);
  CHECK(std::stoll(triples[2]) <= 600000);
  CHECK(triples[3] == b);
  CHECK(triples[5] == "");
  // In: b's home already holds a later end of the id (a job added and ended
  // again there): kept. a is written with its TTL.
  to_redis.command({"SET", keys::ended(b), "x|5000|4000|ef01|0|5|boom"});
  CHECK((*to.run(ended_carry_in_call(triples)))->integer == 1);
  CHECK(text(to_redis.command({"GET", keys::ended(a)}).get()) == "a|2000|1500|abcd|0|1|");
  CHECK(to_redis.command({"PTTL", keys::ended(a)})->integer > 590000);
  CHECK(text(to_redis.command({"GET", keys::ended(b)}).get()) == "x|5000|4000|ef01|0|5|boom");
  // Done: a record that changed since it was read (its job ended again
  // here) stays, for the next pass; an unchanged one goes, on a full shard
  // too (a full shard can be drained).
  from_redis.command({"SET", keys::ended(a), "a|3000|2500|abcd|0|2|"});
  from_redis.command({"CONFIG", "SET", "maxmemory", "1"});
  CHECK((*from.run(ended_carry_done_call({{a, triples[1]}, {b, triples[4]}})))->integer == 1);
  from_redis.command({"CONFIG", "SET", "maxmemory", "0"});
  CHECK(from_redis.command({"EXISTS", keys::ended(a)})->integer == 1);
  CHECK(from_redis.command({"EXISTS", keys::ended(b)})->integer == 0);
  // Carried again, the later end replaces the earlier one on the home.
  CHECK((*to.run(ended_carry_in_call({a, "a|3000|2500|abcd|0|2|", ""})))->integer == 1);
  CHECK(text(to_redis.command({"GET", keys::ended(a)}).get()) == "a|3000|2500|abcd|0|2|");
}

TEST_CASE("while a shard moves in, a gone job's end is the later of its two homes") {
  TestRedis one, two;
  auto store = store_with_roles({&one, &two}, {ShardRole::kActive, ShardRole::kMovingIn});
  std::string id = id_homed_on(*store, "t", 1, "e");  // its previous home is one
  std::string key = keys::ended(job_key("t", id));
  CHECK_FALSE(store->get_ended("t", id));
  one.command({"SET", key, "a|1000|900|abcd|0|1|"});
  auto only_previous = store->get_ended("t", id);
  REQUIRE(only_previous);
  CHECK(only_previous->ended_at_ms == 1000);
  CHECK(only_previous->id == id);
  two.command({"SET", key, "x|2000|1900|abcd|0|5|boom"});  // a job of the id added since
  auto later_on_home = store->get_ended("t", id);
  REQUIRE(later_on_home);
  CHECK(later_on_home->ended_at_ms == 2000);
  CHECK(later_on_home->state == "dead");
  one.command({"SET", key, "a|3000|2900|abcd|0|1|"});
  auto later_on_previous = store->get_ended("t", id);
  REQUIRE(later_on_previous);
  CHECK(later_on_previous->ended_at_ms == 3000);
  // The previous home down: the home's end answers.
  one.stop();
  auto home_alone = store->get_ended("t", id);
  REQUIRE(home_alone);
  CHECK(home_alone->ended_at_ms == 2000);
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

// Update in place: PUT /v1/topics/{t}/jobs/{id} changes a pending job's body
// and/or due time in one step (update.lua), as a new version: the answer of
// a delivery of the old version (ack, fail, an expired lease) never removes
// or overwrites it. Store-level cases through BlockingJobStore, then a real
// dqd delivering to a real callback server.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "common/core/clock.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/job_records.h"
#include "tests/support/redis_server.h"
#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

namespace {

UpdateRequest change(const std::string& id, std::optional<std::string> body,
                     std::optional<DueTime> due) {
  UpdateRequest request;
  request.topic = "t";
  request.id = id;
  request.body = std::move(body);
  request.due = due;
  request.add_due = due ? *due : kNow;
  return request;
}

// The job's stored body, or "" when it is gone.
std::string body_now(BlockingJobStore& store, const std::string& id) {
  auto job = store.get("t", id);
  return job.is_ok() ? job->body : std::string();
}

std::string put_url(DqdProcess& dqd, const std::string& topic, const std::string& id) {
  return dqd.jobs_url(topic) + "/" + id;
}

// The callback document's body member, as JSON.
Json delivered_body(const RecordedRequest& request) {
  Json document = Json::parse(request.body, nullptr, false);
  if (document.is_discarded() || !document.contains("body")) {
    return Json();
  }
  return document["body"];
}

}  // namespace

TEST_CASE("update: a delayed job gets a new body and time in place, as a new version") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "a", "{\"v\":1}", in_ms(3600000)).is_ok());
  std::string first_inc = store->get("t", "a")->incarnation;
  int64_t before = redis_time_ms(redis);

  auto updated = store->update(change("a", std::string("{\"v\":2}"), in_ms(600000)));
  REQUIRE(updated.is_ok());
  CHECK_FALSE(updated->created);
  CHECK(updated->previous == JobState::kDelayed);
  CHECK(updated->due_ms >= before + 600000);
  CHECK(updated->due_ms <= redis_time_ms(redis) + 600000);
  auto job = store->get("t", "a");
  REQUIRE(job.is_ok());
  CHECK(job->body == "{\"v\":2}");
  CHECK(job->state == JobState::kDelayed);
  CHECK(job->due_at_ms == updated->due_ms);
  CHECK(job->incarnation == updated->incarnation);
  CHECK(job->incarnation != first_inc);
  check_consistent(redis);

  // Only the body: the due time stays; only the time: the body stays.
  auto body_only = store->update(change("a", std::string("{\"v\":3}"), std::nullopt));
  REQUIRE(body_only.is_ok());
  CHECK(body_only->due_ms == updated->due_ms);
  CHECK(store->get("t", "a")->due_at_ms == updated->due_ms);
  auto time_only = store->update(change("a", std::nullopt, in_ms(0)));
  REQUIRE(time_only.is_ok());
  CHECK(body_now(*store, "a") == "{\"v\":3}");
  CHECK(time_only->due_ms <= redis_time_ms(redis));

  // A body too big to sit inline goes apart, and back inline.
  std::string big = "\"" + std::string(1000, 'x') + "\"";
  REQUIRE(store->update(change("a", big, std::nullopt)).is_ok());
  CHECK(body_now(*store, "a") == big);
  check_consistent(redis);
  REQUIRE(store->update(change("a", std::string("{\"v\":4}"), std::nullopt)).is_ok());
  CHECK(body_now(*store, "a") == "{\"v\":4}");
  CHECK(integer(redis, {"HEXISTS", keys::bodies(), job_key("t", "a")}) == 0);
  check_consistent(redis);

  // The new version is the one delivered.
  ReservedJob taken = reserve_one(*store, "t", 30000, "r1");
  CHECK(taken.job.body == "{\"v\":4}");
  CHECK(taken.job.attempts == 1);
}

TEST_CASE("update: a ready job goes back to waiting for its new time; not reserved before it") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "r", "{\"v\":1}", kNow).is_ok());
  REQUIRE(store->promote(0, 100)->moved == 1);
  REQUIRE(store->get("t", "r")->state == JobState::kReady);
  auto updated = store->update(change("r", std::string("{\"v\":2}"), in_ms(60000)));
  REQUIRE(updated.is_ok());
  CHECK(updated->previous == JobState::kReady);
  CHECK(store->get("t", "r")->state == JobState::kDelayed);
  CHECK(llen(redis, keys::ready("t")) == 0);
  check_consistent(redis);
  REQUIRE(store->promote(0, 100).is_ok());
  auto batch = store->reserve(0, "r1", {slot("t", 30000)}, 10, 1 << 20);
  REQUIRE(batch.is_ok());
  CHECK(batch->jobs.empty());
}

TEST_CASE("update: a reserved job's stale ack and fail change nothing; no ended record") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "w", "{\"v\":1}", kNow).is_ok());
  ReservedJob old = reserve_one(*store, "t", 30000, "r1");
  REQUIRE(old.job.body == "{\"v\":1}");

  // Body only: the new version is due at once (the old one's time passed).
  auto updated = store->update(change("w", std::string("{\"v\":2}"), std::nullopt));
  REQUIRE(updated.is_ok());
  CHECK(updated->previous == JobState::kWorking);
  CHECK(updated->due_ms <= redis_time_ms(redis));
  CHECK(zcard(redis, keys::working()) <= 1);  // the anchor at most
  check_consistent(redis);

  // The old delivery's answers: gone, nothing written.
  auto acked = ack(*store, 0, "t", "w", old.lease);
  REQUIRE(acked.is_ok());
  CHECK(*acked == AckOutcome::kGone);
  auto with_window = store->ack_all(0, {{"t", "w", old.lease, EndMemory{60000, 0}.arg()}});
  REQUIRE(with_window[0].is_ok());
  CHECK(*with_window[0] == AckOutcome::kGone);
  CHECK(integer(redis, {"EXISTS", keys::ended(job_key("t", "w"))}) == 0);
  auto failed = store->fail(0, "t", "w", old.lease, 1000, 5, "HTTP 500");
  REQUIRE(failed.is_ok());
  CHECK(*failed == FailOutcome::kStale);
  auto job = store->get("t", "w");
  REQUIRE(job.is_ok());
  CHECK(job->body == "{\"v\":2}");
  CHECK(job->state == JobState::kDelayed);
  CHECK(job->attempts == 0);
  check_consistent(redis);

  // The new version is delivered next; its own ack ends it and remembers
  // the new body: a retried add of the old body is a new job, not "ended".
  ReservedJob fresh = reserve_one(*store, "t", 30000, "r2");
  CHECK(fresh.job.body == "{\"v\":2}");
  CHECK(fresh.lease.incarnation == updated->incarnation);
  auto done = store->ack_all(0, {{"t", "w", fresh.lease, EndMemory{60000, 0}.arg()}});
  REQUIRE(done[0].is_ok());
  CHECK(*done[0] == AckOutcome::kAcked);
  auto retried_new = store->add("t", "w", "{\"v\":2}", kNow);
  REQUIRE(retried_new.is_ok());
  CHECK(retried_new->ended == "delivered");
  auto old_body = store->add("t", "w", "{\"v\":1}", in_ms(60000));
  REQUIRE(old_body.is_ok());
  CHECK_FALSE(old_body->existing);
  check_consistent(redis);
}

TEST_CASE("update: an expired lease of the old version does not requeue or kill the new one") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "e", "{\"v\":1}", kNow).is_ok());
  ReservedJob old = reserve_one(*store, "t", 50, "r1", 1);
  REQUIRE(store->update(change("e", std::string("{\"v\":2}"), in_ms(60000))).is_ok());
  sleep_ms(120);
  auto expired = store->requeue_expired(0, 100);
  REQUIRE(expired.is_ok());
  CHECK(expired->requeued == 0);
  CHECK(expired->dead.empty());
  auto job = store->get("t", "e");
  REQUIRE(job.is_ok());
  CHECK(job->state == JobState::kDelayed);
  CHECK(job->body == "{\"v\":2}");
  auto released = store->release(0, "r1");
  REQUIRE(released.is_ok());
  CHECK(*released == 0);
  CHECK(store->get("t", "e")->state == JobState::kDelayed);
  check_consistent(redis);
}

TEST_CASE("update: a retrying job starts over; a dead letter is refused; none found is an add") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "y", "{\"v\":1}", kNow).is_ok());
  ReservedJob job = reserve_one(*store, "t", 30000, "r1");
  REQUIRE(*store->fail(0, "t", "y", job.lease, 3600000, 5, "HTTP 500") ==
          FailOutcome::kRescheduled);
  REQUIRE(store->get("t", "y")->state == JobState::kRetrying);
  auto updated = store->update(change("y", std::string("{\"v\":2}"), in_ms(0)));
  REQUIRE(updated.is_ok());
  CHECK(updated->previous == JobState::kRetrying);
  auto after = store->get("t", "y");
  REQUIRE(after.is_ok());
  CHECK(after->state == JobState::kDelayed);
  CHECK(after->attempts == 0);
  CHECK(after->last_error.empty());
  check_consistent(redis);

  // A new time alone (the body kept) starts over too: the first attempt's
  // time (the record's ninth field, max_retry_duration_s's clock) goes.
  auto fields_of = [&redis](const std::string& key) {
    std::string record = record_of(redis, key).value_or("");
    std::string meta = record.substr(0, record.find('\n'));
    return std::count(meta.begin(), meta.end(), '|') + 1;
  };
  REQUIRE(store->add("u", "z", "{\"v\":1}", kNow).is_ok());  // topic u: y is ready in t
  ReservedJob z = reserve_one(*store, "u", 30000, "r3");
  REQUIRE(*store->fail(0, "u", "z", z.lease, 3600000, 5, "HTTP 500") == FailOutcome::kRescheduled);
  CHECK(fields_of("u:z") == 9);
  UpdateRequest retimed = change("z", std::nullopt, in_ms(0));
  retimed.topic = "u";
  REQUIRE(store->update(retimed).is_ok());
  CHECK(fields_of("u:z") <= 8);
  CHECK(store->get("u", "z")->body == "{\"v\":1}");
  check_consistent(redis);

  // Dead: 409, unchanged.
  ReservedJob again = reserve_one(*store, "t", 30000, "r2");
  REQUIRE(*store->fail(0, "t", "y", again.lease, 1000, 1, "HTTP 500") == FailOutcome::kDead);
  auto dead = store->update(change("y", std::string("{\"v\":3}"), std::nullopt));
  CHECK(dead.status().code() == Code::kConflict);
  CHECK(store->get("t", "y")->body == "{\"v\":2}");

  // None: added with the add's answer; without a body: refused, nothing added.
  auto created = store->update(change("new", std::string("{\"v\":1}"), in_ms(60000)));
  REQUIRE(created.is_ok());
  CHECK(created->created);
  CHECK(store->get("t", "new")->body == "{\"v\":1}");
  auto bodiless = store->update(change("none", std::nullopt, in_ms(60000)));
  CHECK(bodiless.status().code() == Code::kInvalid);
  CHECK(store->get("t", "none").status().code() == Code::kNotFound);
  check_consistent(redis);
}

TEST_CASE("update: a record without an incarnation (older stores) is given one") {
  TestRedis redis;
  auto store = store_over({&redis});
  REQUIRE(store->add("t", "old", "{\"v\":1}", kNow).is_ok());
  // Rewritten as an older store left it: no incarnation.
  std::string key = job_key("t", "old");
  std::string bucket_key = keys::records_prefix() + std::to_string(keys::bucket_of(key));
  std::string record = text(redis.command({"HGET", bucket_key, key}).get());
  size_t nl = record.find('\n');
  std::string meta = record.substr(0, nl);
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    size_t bar = meta.find('|', start);
    fields.push_back(meta.substr(start, bar == std::string::npos ? bar : bar - start));
    if (bar == std::string::npos) {
      break;
    }
    start = bar + 1;
  }
  REQUIRE(fields.size() >= 7);
  fields[4].clear();
  std::string legacy;
  for (size_t i = 0; i < fields.size(); ++i) {
    legacy += (i ? "|" : "") + fields[i];
  }
  redis.command({"HSET", bucket_key, key, legacy + record.substr(nl)});
  ReservedJob leased = reserve_one(*store, "t", 30000, "r1");
  REQUIRE(leased.lease.incarnation.empty());

  auto updated = store->update(change("old", std::string("{\"v\":2}"), in_ms(0)));
  REQUIRE(updated.is_ok());
  CHECK_FALSE(updated->incarnation.empty());
  CHECK(*ack(*store, 0, "t", "old", leased.lease) == AckOutcome::kGone);
  CHECK(body_now(*store, "old") == "{\"v\":2}");
  ReservedJob fresh = reserve_one(*store, "t", 30000, "r2");
  CHECK(fresh.job.body == "{\"v\":2}");
  CHECK(*ack(*store, 0, "t", "old", fresh.lease) == AckOutcome::kAcked);
  check_consistent(redis);
}

TEST_CASE(
    "PUT: 100 jobs updated while their callbacks hang are delivered again, new body, new time") {
  TestRedis redis;
  CallbackServer callback;
  constexpr size_t kJobs = 100;
  constexpr int kHoldMs = 4000;
  // A first version's delivery hangs kHoldMs, then answers 200.
  callback.set_responder([](const RecordedRequest& request, size_t) {
    return delivered_body(request).value("v", 0) == 1 ? CallbackAnswer(200, kHoldMs)
                                                      : CallbackAnswer(200);
  });
  DqdOptions options = one_timer_one_consumer({redis.address()});
  options.consumer_concurrency = static_cast<int>(2 * kJobs);
  DqdProcess dqd(options);
  register_topic(dqd, "remind", callback.url(), 30000);
  dqd.start();
  HttpClient http;
  for (size_t i = 0; i < kJobs; ++i) {
    REQUIRE(http.post(dqd.jobs_url("remind"), job_doc("j" + std::to_string(i), Json{{"v", 1}}, 0))
                .status == 201);
  }
  REQUIRE(callback.wait_for(kJobs, 30000));
  int64_t first_arrival = callback.requests().front().arrived_ms;

  std::map<std::string, int64_t> due_of;
  for (size_t i = 0; i < kJobs; ++i) {
    std::string id = "j" + std::to_string(i);
    HttpResult put = http.request(
        "PUT", put_url(dqd, "remind", id),
        // Due after the old answers come: they find the new version pending.
        Json{{"body", Json{{"v", 2}, {"id", id}}}, {"delay", kHoldMs / 1000 + 2}}.dump());
    REQUIRE_MESSAGE(put.status == 200, put.body);
    CHECK(put.json()["previous_state"] == "working");
    due_of[id] = put.json()["due_at_ms"].get<int64_t>();
  }
  int64_t puts_done = wall_ms();
  MESSAGE("100 PUTs done " << puts_done - first_arrival << " ms after the first hanging call");
  // The old deliveries were still hanging when their jobs were updated.
  CHECK(puts_done < first_arrival + kHoldMs);

  REQUIRE(callback.wait_for(2 * kJobs, 60000));
  // Every old answer came back (200) and nothing more was delivered.
  REQUIRE(wait_until(30000, [&] { return callback.open_now() == 0; }));
  sleep_ms(1500);
  std::map<std::string, int> v1, v2;
  for (const auto& request : callback.requests()) {
    Json body = delivered_body(request);
    std::string id = request.header("x-dq-id");
    if (body.value("v", 0) == 1) {
      ++v1[id];
    } else {
      ++v2[id];
      CHECK(body.value("id", std::string()) == id);
      CHECK_MESSAGE(request.arrived_ms >= due_of[id],
                    id << " delivered " << due_of[id] - request.arrived_ms << " ms early");
    }
  }
  CHECK(callback.count() == 2 * kJobs);
  CHECK(v1.size() == kJobs);
  CHECK(v2.size() == kJobs);
  for (const auto& delivered : v2) {
    CHECK_MESSAGE(delivered.second == 1,
                  delivered.first << " new version delivered " << delivered.second);
  }
  for (size_t i = 0; i < kJobs; ++i) {
    CHECK(http.get(put_url(dqd, "remind", "j" + std::to_string(i))).status == 404);
  }
  check_consistent(redis);
}

TEST_CASE("PUT: 1,000 updates racing deliveries and deletes lose nothing, deliver nothing early") {
  TestRedis redis;
  CallbackServer callback;
  callback.set_responder([](const RecordedRequest&, size_t n) {
    return CallbackAnswer(200, static_cast<int>(n % 4) * 15);
  });
  DqdOptions options = one_timer_one_consumer({redis.address()});
  DqdProcess dqd(options);
  register_topic(dqd, "race", callback.url(), 10000);
  dqd.start();

  constexpr int kIds = 40;
  constexpr int kThreads = 4;
  constexpr int kPutsPerThread = 250;  // 1,000 PUTs, and deletes among them
  // One op at a time per id (the id's mutex is held over its request), so
  // each id's history is ordered; deliveries race it freely.
  struct Op {
    bool put = false;
    int status = 0;
    int version = 0;  // PUT: the body's v
    int64_t due_ms = 0;
  };
  std::vector<std::mutex> id_locks(kIds);
  std::vector<std::vector<Op>> history(kIds);
  std::map<int, int64_t> due_of_version;  // every version put, 200 or 201
  std::mutex versions_lock;
  std::atomic<int> next_version{1};
  std::atomic<int> odd{0};

  auto worker = [&](int thread) {
    HttpClient http;
    std::mt19937 random(static_cast<unsigned>(thread * 7919 + 1));
    for (int puts = 0; puts < kPutsPerThread;) {
      sleep_ms(static_cast<int>(random() % 8));  // deliveries get in between
      int i = static_cast<int>(random() % kIds);
      std::string id = "r" + std::to_string(i);
      std::lock_guard<std::mutex> lock(id_locks[i]);
      Op op;
      if (random() % 100 < 85) {
        op.put = true;
        ++puts;
        op.version = next_version++;
        Json fields{{"body", Json{{"v", op.version}}}};
        if (random() % 2) {
          fields["delay"] = static_cast<double>(random() % 400) / 1000.0;
        } else {
          fields["at"] =  // unix seconds, with a fraction
              static_cast<double>(wall_ms() + static_cast<int64_t>(random() % 400)) / 1000.0;
        }
        HttpResult put = http.request("PUT", put_url(dqd, "race", id), fields.dump(), 10000);
        op.status = static_cast<int>(put.status);
        if (put.status == 200 || put.status == 201) {
          op.due_ms = put.json()["due_at_ms"].get<int64_t>();
          std::lock_guard<std::mutex> versions(versions_lock);
          due_of_version[op.version] = op.due_ms;
        } else {
          ++odd;
          MESSAGE("PUT " << id << " -> " << put.status << " " << put.body);
        }
      } else {
        HttpResult del = http.del(put_url(dqd, "race", id));
        op.status = static_cast<int>(del.status);
        if (del.status != 204 && del.status != 202 && del.status != 404) {
          ++odd;
          MESSAGE("DELETE " << id << " -> " << del.status << " " << del.body);
        }
      }
      history[i].push_back(op);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(worker, t);
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(odd.load() == 0);

  // What must be delivered: each id's last PUT, unless a later DELETE
  // answered 204 or 202 (it deleted that version, pending or in flight).
  std::set<int> must;
  for (int i = 0; i < kIds; ++i) {
    int last_put = 0;
    for (const Op& op : history[i]) {
      if (op.put && (op.status == 200 || op.status == 201)) {
        last_put = op.version;
      } else if (!op.put && (op.status == 204 || op.status == 202)) {
        last_put = 0;
      }
    }
    if (last_put) {
      must.insert(last_put);
    }
  }
  MESSAGE(must.size() << " ids end with a PUT to deliver");
  auto delivered_versions = [&] {
    std::map<int, std::vector<int64_t>> out;
    for (const auto& request : callback.requests()) {
      out[delivered_body(request).value("v", 0)].push_back(request.arrived_ms);
    }
    return out;
  };
  bool all = wait_within(60000, [&] {
    auto delivered = delivered_versions();
    for (int v : must) {
      if (!delivered.count(v)) {
        return false;
      }
    }
    return true;
  });
  auto delivered = delivered_versions();
  for (int v : must) {
    CHECK_MESSAGE(delivered.count(v) == 1, "version " << v << " lost");
  }
  CHECK(all);
  // Nothing early: every delivery of a version came at or after its due time.
  int early = 0;
  for (const auto& version : delivered) {
    int v = version.first;
    const std::vector<int64_t>& arrivals = version.second;
    REQUIRE_MESSAGE(due_of_version.count(v), "delivered a version never accepted: " << v);
    for (int64_t at : arrivals) {
      if (at < due_of_version[v]) {
        ++early;
        MESSAGE("version " << v << " delivered " << due_of_version[v] - at << " ms early");
      }
    }
  }
  CHECK(early == 0);
  // Everything ran or was deleted: no job is left, and Redis agrees with itself.
  HttpClient http;
  CHECK(wait_within(30000, [&] {
    for (int i = 0; i < kIds; ++i) {
      if (http.get(put_url(dqd, "race", "r" + std::to_string(i))).status != 404) return false;
    }
    return true;
  }));
  check_consistent(redis);
  MESSAGE(callback.count() << " deliveries for " << next_version.load() - 1 << " PUTs");
}

TEST_CASE("PUT: an unknown id is added and delivered; bad PUTs are refused and change nothing") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  register_topic(dqd, "orders", callback.url());
  dqd.start();
  HttpClient http;
  HttpResult created = http.request("PUT", put_url(dqd, "orders", "fresh"),
                                    Json{{"body", Json{{"n", 1}}}, {"delay", 0.2}}.dump());
  REQUIRE(created.status == 201);
  CHECK(created.json()["created"] == true);
  REQUIRE(callback.wait_for(1, 10000));
  CHECK(delivered_body(callback.requests()[0]) == Json{{"n", 1}});
  CHECK(callback.requests()[0].arrived_ms >= created.json()["due_at_ms"].get<int64_t>());

  REQUIRE(http.post(dqd.jobs_url("orders"), job_doc("kept", Json{{"n", 2}}, 3600)).status == 201);
  Json before = http.get(put_url(dqd, "orders", "kept")).json();
  struct Bad {
    std::string topic, body;
    int status;
    std::string says;
  };
  std::vector<Bad> bad = {
      {"orders", "{not json", 400, "not valid JSON"},
      {"orders", "", 400, "empty"},
      {"orders", "[1]", 400, "JSON object"},
      {"orders", R"({"delay": -5, "body": 1})", 400, "negative"},
      {"orders", R"({"delay": 5, "at": 1700000000000})", 400, "not both"},
      {"orders", R"({"body": 1, "priority": 3})", 400, "unknown field 'priority'"},
      {"orders", R"({})", 400, "nothing to change"},
      {"ghost", R"({"body": 1})", 404, "ghost"},
  };
  for (const Bad& b : bad) {
    HttpResult answer = http.request("PUT", put_url(dqd, b.topic, "kept"), b.body);
    CHECK_MESSAGE(answer.status == b.status, b.body << " -> " << answer.status << answer.body);
    std::string error = answer.json().value("error", std::string());
    CHECK_MESSAGE(error.find(b.says) != std::string::npos, b.body << ": " << error);
  }
  // A missing id without a body cannot be added.
  HttpResult bodiless = http.request("PUT", put_url(dqd, "orders", "nobody"), R"({"delay": 5})");
  CHECK(bodiless.status == 400);
  CHECK(http.get(put_url(dqd, "orders", "nobody")).status == 404);
  Json after = http.get(put_url(dqd, "orders", "kept")).json();
  CHECK(after == before);

  // A good one: 200 with the new state.
  HttpResult ok = http.request("PUT", put_url(dqd, "orders", "kept"),
                               Json{{"body", Json{{"n", 3}}}, {"delay", 7200}}.dump());
  REQUIRE(ok.status == 200);
  CHECK(ok.json()["updated"] == true);
  CHECK(ok.json()["state"] == "delayed");
  CHECK(ok.json()["previous_state"] == "delayed");
  Json now = http.get(put_url(dqd, "orders", "kept")).json();
  CHECK(now["body"] == Json{{"n", 3}});
  CHECK(now["due_at_ms"] == ok.json()["due_at_ms"]);

  // Its home down: 503 with Retry-After, nothing changed.
  redis.stop();
  HttpResult down;
  wait_until(10000, [&] {
    down = http.request("PUT", put_url(dqd, "orders", "kept"), R"({"body": 9})");
    return down.status == 503;
  });
  CHECK(down.status == 503);
  CHECK(down.header("retry-after") == "1");
  redis.start();
  wait_until(10000, [&] { return http.get(put_url(dqd, "orders", "kept")).status == 200; });
  CHECK(http.get(put_url(dqd, "orders", "kept")).json()["body"] == Json{{"n", 3}});
}

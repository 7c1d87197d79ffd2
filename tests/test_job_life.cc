// A job's life after it is due: expiry (a job's ttl or expire_at, a topic's
// ttl), the topic's late_policy, and its history (keep_done_days: GET
// answers done, expired, deleted instead of 404). Real dqd, real Redis, a
// real callback server; the jobs are counted on the receiver.
#include <doctest/doctest.h>

#include "common/core/clock.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"
#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

namespace {

Topic life_topic(const std::string& name, const std::string& url) {
  Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.circuit_breaker = false;
  return topic;
}

std::string job_with(const std::string& id, Json extra) {
  Json doc{{"id", id}, {"body", Json{{"id", id}}}};
  for (auto& [key, value] : extra.items()) doc[key] = value;
  return doc.dump();
}

void set_online(DqdProcess& dqd, const std::string& topic) {
  auto online = run_dqctl({"-c", dqd.config_path(), "topic", "online", topic}, dqd.dir());
  REQUIRE_MESSAGE(online.exit_code == 0, online.err);
}

int64_t stat_of(HttpClient& http, DqdProcess& dqd, const std::string& topic,
                const std::string& event) {
  Json stats = http.get(dqd.base_url() + "/v1/topics/" + topic + "/stats").json();
  return stats["total"].value(event, int64_t{-1});
}

}  // namespace

TEST_CASE("ttl, expire_at and a topic's ttl: refused when they end before the due time") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  add_topic(dqd, life_topic("t", callback.url()));
  dqd.start();
  HttpClient http;
  const std::string url = dqd.jobs_url("t");
  auto refused = [&](const std::string& doc, const std::string& words) {
    HttpResult r = http.post(url, doc);
    CHECK_MESSAGE(r.status == 400, doc << " -> " << r.status << " " << r.body);
    CHECK_MESSAGE(r.json()["error"].get<std::string>().find(words) != std::string::npos, r.body);
  };
  refused(job_with("a", {{"ttl", 0}}), "ttl must be");
  refused(job_with("a", {{"ttl", -5}}), "ttl must be");
  refused(job_with("a", {{"ttl", "soon"}}), "ttl must be");
  refused(job_with("a", {{"ttl", 5}, {"expire_at", "+1 hours"}}), "not both");
  refused(job_with("a", {{"delay", 600}, {"expire_at", "+5 minutes"}}),
          "not after the job's due time");
  refused(job_with("a", {{"expire_at", "someday"}}), "expire_at");
  CHECK(http.get(url + "/a").status == 404);  // nothing was written

  // A job's own ttl: expires_at_ms is its due time plus the ttl.
  HttpResult added = http.post(url, job_with("b", {{"delay", 600}, {"ttl", 30}}));
  REQUIRE(added.status == 201);
  Json b = http.get(url + "/b").json();
  CHECK(b["expires_at_ms"].get<int64_t>() == b["due_at_ms"].get<int64_t>() + 30000);
  // An update moving it past its expiry is refused; with a ttl it is taken.
  HttpResult moved = http.request("PUT", url + "/b", Json{{"delay", 3600}}.dump());
  CHECK(moved.status == 400);
  CHECK(http.get(url + "/b").json()["due_at_ms"] == b["due_at_ms"]);
  moved = http.request("PUT", url + "/b", Json{{"delay", 3600}, {"ttl", 60}}.dump());
  CHECK(moved.status == 200);
  Json b2 = http.get(url + "/b").json();
  CHECK(b2["expires_at_ms"].get<int64_t>() == b2["due_at_ms"].get<int64_t>() + 60000);
  // A fixed expire_at, read in the add's zone.
  REQUIRE(http.post(url, job_with("c", {{"at", "2030-01-01 09:00"},
                                        {"tz", "Europe/Paris"},
                                        {"expire_at", "2030-01-01 10:00"}}))
              .status == 201);
  Json c = http.get(url + "/c").json();
  CHECK(c["due_at_ms"] == int64_t{1893484800000});
  CHECK(c["expires_at_ms"] == int64_t{1893488400000});
  // No ttl anywhere: no expiry.
  REQUIRE(http.post(url, job_with("d", {{"delay", 600}})).status == 201);
  CHECK_FALSE(http.get(url + "/d").json().contains("expires_at_ms"));
}

TEST_CASE(
    "an expired job is never delivered; with keep_done_days GET says done, expired, deleted") {
  TestRedis redis;
  CallbackServer callback;
  callback.set_responder([](const RecordedRequest& request, size_t) {
    if (request.path == "/fails") return CallbackAnswer(500, 0, "down");
    return CallbackAnswer(200, 0, "{\"thanks\":\"" + request.header("x-dq-id") + "\"}");
  });
  DqdOptions options = one_timer_one_consumer({redis.address()});
  DqdProcess dqd(options);
  Topic kept = life_topic("kept", callback.url());
  kept.keep_done_days = 1;
  add_topic(dqd, kept);
  Topic held = life_topic("held", callback.url());  // offline until its jobs expired
  held.keep_done_days = 1;
  held.online = false;
  held.ttl = 1;  // the topic's ttl: 1 s after a job is due
  add_topic(dqd, held);
  Topic failing = life_topic("failing", callback.url("/fails"));
  failing.keep_done_days = 1;
  failing.retry_ms = "60000";
  add_topic(dqd, failing);
  Topic plain = life_topic("plain", callback.url());  // no history: 404 as before
  add_topic(dqd, plain);
  dqd.start();
  HttpClient http;

  // Delivered: GET answers done, with the answer's status and first bytes.
  REQUIRE(http.post(dqd.jobs_url("kept"), job_with("k1", {{"ttl", 60}})).status == 201);
  REQUIRE(http.post(dqd.jobs_url("plain"), job_with("p1", {})).status == 201);
  REQUIRE(callback.wait_for(2, 20000));
  Json done;
  REQUIRE(wait_within(20000, [&] {
    done = http.get(dqd.jobs_url("kept") + "/k1").json();
    return done.value("state", "") == "done";
  }));
  CHECK(done["attempts"] == 1);
  CHECK(done["last_status"] == 200);
  CHECK(done["answer"] == "{\"thanks\":\"k1\"}");
  CHECK_FALSE(done["delivered_by"].get<std::string>().empty());
  CHECK(done["ended_at_ms"].get<int64_t>() >= done["due_at_ms"].get<int64_t>());
  REQUIRE(
      wait_within(20000, [&] { return http.get(dqd.jobs_url("plain") + "/p1").status == 404; }));

  // Deleted: GET says deleted; a job never added is still 404.
  REQUIRE(http.post(dqd.jobs_url("kept"), job_with("k2", {{"delay", 600}})).status == 201);
  REQUIRE(http.del(dqd.jobs_url("kept") + "/k2").status == 204);
  Json deleted = http.get(dqd.jobs_url("kept") + "/k2").json();
  CHECK(deleted["state"] == "deleted");
  CHECK(deleted["reason"] == "deleted while delayed");
  CHECK(http.get(dqd.jobs_url("kept") + "/never").status == 404);

  // Expired while its topic was offline (the topic's ttl of 1 s), and one
  // whose own ttl outlasts the wait: only that one is delivered.
  const int kExpiring = 20;
  for (int i = 0; i < kExpiring; ++i) {
    REQUIRE(http.post(dqd.jobs_url("held"), job_with("e" + std::to_string(i), {})).status == 201);
  }
  REQUIRE(http.post(dqd.jobs_url("held"), job_with("lasts", {{"ttl", 600}})).status == 201);
  sleep_ms(2500);  // due at once, 1 s to live: all 20 are past it when the topic comes online
  set_online(dqd, "held");
  REQUIRE(wait_within(30000, [&] { return deliveries_by_id(callback)["lasts"] == 1; }));
  REQUIRE(
      wait_within(30000, [&] { return stat_of(http, dqd, "held", "ttl_expired") == kExpiring; }));
  std::map<std::string, int> got = deliveries_by_id(callback);
  for (int i = 0; i < kExpiring; ++i) {
    std::string id = "e" + std::to_string(i);
    CHECK_MESSAGE(got[id] == 0, id << " was delivered after it expired");
    Json gone = http.get(dqd.jobs_url("held") + "/" + id).json();
    CHECK(gone["state"] == "expired");
    CHECK(gone["reason"].get<std::string>().find("expired at") != std::string::npos);
  }

  // Its ttl ends before its next attempt: it expires at the failure.
  REQUIRE(http.post(dqd.jobs_url("failing"), job_with("f1", {{"ttl", 30}})).status == 201);
  Json failed;
  REQUIRE(wait_within(30000, [&] {
    failed = http.get(dqd.jobs_url("failing") + "/f1").json();
    return failed.value("state", "") == "expired";
  }));
  CHECK(failed["attempts"] == 1);
  CHECK(failed["reason"].get<std::string>().find("before its next attempt") != std::string::npos);
  CHECK(deliveries_by_id(callback)["f1"] == 1);

  // The counts reach /metrics.
  std::string metrics = http.get(dqd.base_url() + "/metrics").body;
  CHECK(metrics.find("dq_jobs_ttl_expired_total{topic=\"held\"} 20") != std::string::npos);
  CHECK(metrics.find("dq_jobs_ttl_expired_total{topic=\"failing\"} 1") != std::string::npos);
}

TEST_CASE("late_policy: jobs found later than S after a consumer outage are dead or dropped") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  // Offline stands for the outage: due jobs wait ready, no consumer takes them.
  for (const auto& [name, policy] :
       std::vector<std::pair<std::string, std::string>>{{"dead-late", "dead_after:2"},
                                                        {"drop-late", "drop_after:2"},
                                                        {"patient", "dead_after:600"}}) {
    Topic topic = life_topic(name, callback.url());
    topic.late_policy = policy;
    topic.online = false;
    topic.keep_done_days = 1;
    add_topic(dqd, topic);
  }
  dqd.start();
  HttpClient http;
  const int kEach = 10;
  for (const char* topic : {"dead-late", "drop-late", "patient"}) {
    for (int i = 0; i < kEach; ++i) {
      REQUIRE(http.post(dqd.jobs_url(topic), job_with(std::string(topic) + std::to_string(i), {}))
                  .status == 201);
    }
  }
  sleep_ms(3500);  // every job is now more than 2 s late
  for (const char* topic : {"dead-late", "drop-late", "patient"}) set_online(dqd, topic);
  REQUIRE(wait_within(30000, [&] { return callback.count() >= size_t{kEach}; }));
  REQUIRE(wait_within(30000, [&] {
    return stat_of(http, dqd, "dead-late", "dead") == kEach &&
           stat_of(http, dqd, "drop-late", "late_dropped") == kEach;
  }));
  sleep_ms(500);  // nothing else arrives
  std::map<std::string, int> got = deliveries_by_id(callback);
  int delivered_late = 0;
  for (int i = 0; i < kEach; ++i) {
    delivered_late += got["dead-late" + std::to_string(i)] + got["drop-late" + std::to_string(i)];
    CHECK(got["patient" + std::to_string(i)] == 1);
  }
  CHECK(delivered_late == 0);
  CHECK(callback.count() == size_t{kEach});
  // The dead letters carry the reason "late"; the dropped ones say expired.
  Json dead = http.get(dqd.jobs_url("dead-late") + "/dead-late0").json();
  CHECK(dead["state"] == "dead");
  CHECK(dead["attempts"] == 0);
  CHECK(dead["last_error"].get<std::string>().rfind("late:", 0) == 0);
  // Each late death queued its alert, as any death does.
  CHECK(wait_within(10000, [&] {
    return contains(text_of_dir(dqd.log_dir()),
                    "dead-late/dead-late9 is dead after 0 attempts: late:");
  }));
  Json dropped = http.get(dqd.jobs_url("drop-late") + "/drop-late0").json();
  CHECK(dropped["state"] == "expired");
  CHECK(dropped["reason"].get<std::string>().rfind("late:", 0) == 0);
  CHECK(http.get(dqd.base_url() + "/metrics")
            .body.find("dq_jobs_late_dropped_total{topic=\"drop-late\"} 10") != std::string::npos);
}

// Dependencies between jobs (docs/delivery.md, "Dependencies between jobs"):
// a job added with "after" waits until each job it names was delivered.
// Real dqd (timer, consumer, dq-redis-checker with its releaser), two real
// Redis shards, a real callback server that records when each call came;
// the jobs a case pairs sit on different shards. Also: bad input, a
// dependency deleted, a waiter expiring, the releaser killed, dqctl.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <random>

#include "common/store/job.h"
#include "common/store/placement.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;

namespace {

struct TwoShards {
  TestRedis one, two;
  std::vector<ShardAddress> addresses() const { return {one.shard(), two.shard()}; }
  std::vector<std::string> names() const { return {one.address(), two.address()}; }
};

// The home shard (0 or 1) of topic/id.
size_t home_of(const TwoShards& shards, const std::string& topic, const std::string& id) {
  auto homes =
      id_homes(shards.addresses(), {ShardRole::kActive, ShardRole::kActive}, job_key(topic, id));
  REQUIRE(homes);
  return homes->home;
}

// The first id "<prefix><n>" of topic whose home is `shard`.
std::string id_on(const TwoShards& shards, const std::string& topic, const std::string& prefix,
                  size_t shard, int from = 0) {
  for (int n = from;; ++n) {
    std::string id = prefix + std::to_string(n);
    if (home_of(shards, topic, id) == shard) return id;
  }
}

Topic plain_topic(const std::string& name, const std::string& url) {
  Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.circuit_breaker = false;
  return topic;
}

Json after(std::initializer_list<std::pair<std::string, std::string>> jobs) {
  Json list = Json::array();
  for (const auto& [topic, id] : jobs) list.push_back(Json{{"topic", topic}, {"id", id}});
  return list;
}

// When each id's callbacks came (wall ms), in order.
std::map<std::string, std::vector<int64_t>> calls_by_id(const CallbackServer& callback) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& request : callback.requests()) {
    out[request.header("x-dq-id")].push_back(request.arrived_ms);
  }
  return out;
}

// The one child of dqd titled `title`, waited for: a busy machine (a
// sanitizer build) may not have started or titled it yet when dqd answers.
pid_t only_child_titled(const DqdProcess& dqd, const std::string& title) {
  std::vector<pid_t> found;
  wait_until(30000, [&] {
    found = children_titled(dqd.pid(), title);
    return found.size() == 1;
  });
  REQUIRE_MESSAGE(found.size() == 1, "children titled " << title << ": " << found.size());
  return found[0];
}

}  // namespace

TEST_CASE("a job added before the one it waits for waits, then runs after its 2xx") {
  TwoShards shards;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer(shards.names()));
  add_topic(dqd, plain_topic("t", callback.url()));
  dqd.start();
  HttpClient http;
  const std::string url = dqd.jobs_url("t");
  const std::string a = id_on(shards, "t", "a", 0);
  const std::string b = id_on(shards, "t", "b", 1);

  // B first: A does not exist yet. B waits, on the other shard.
  HttpResult added = http.post(
      url, Json{{"id", b}, {"body", Json{{"n", 1}}}, {"after", after({{"t", a}})}}.dump());
  REQUIRE_MESSAGE(added.status == 201, added.body);
  CHECK(added.json().value("waiting", false));
  Json got = get_job(http, dqd, "t", b);
  CHECK(got["state"] == "waiting");
  CHECK(got["waiting"]["reason"] == "dependencies");
  CHECK(got["waiting"]["after"] == after({{"t", a}}));
  CHECK(got["waiting"]["since_ms"].is_number());
  // A retried add of B is the same add.
  HttpResult again = http.post(
      url, Json{{"id", b}, {"body", Json{{"n", 1}}}, {"after", after({{"t", a}})}}.dump());
  CHECK(again.status == 200);
  // The topic's listing of waiting jobs shows it.
  Json listed = http.get(url + "?state=waiting").json();
  REQUIRE(listed["jobs"].size() == 1);
  CHECK(listed["jobs"][0]["id"] == b);
  CHECK(listed["jobs"][0]["after"] == Json::array({Json{{"topic", "t"}, {"id", a}}}));
  CHECK(listed["total"] == 1);

  sleep_ms(1500);  // B is due (delay 0) but waits: no call for it
  CHECK(callback.count() == 0);
  REQUIRE(http.post(url, job_doc(a, Json{{"n", 0}}, 0.5)).status == 201);
  REQUIRE(wait_until(20000, [&] { return callback.count() >= 2; }));
  auto calls = calls_by_id(callback);
  REQUIRE(calls[a].size() == 1);
  REQUIRE(calls[b].size() == 1);
  CHECK(calls[b][0] >= calls[a][0]);
  MESSAGE("B's call came " << calls[b][0] - calls[a][0] << " ms after A's");

  // B2 waits for A2 and has a delay of its own, longer than A2's: it runs at
  // its own due time, after A2.
  const std::string a2 = id_on(shards, "t", "a", 1, 1000);
  const std::string b2 = id_on(shards, "t", "b", 0, 1000);
  HttpResult b2_added = http.post(
      url, Json{{"id", b2}, {"body", 2}, {"delay", 4}, {"after", after({{"t", a2}})}}.dump());
  REQUIRE(b2_added.status == 201);
  int64_t b2_due = b2_added.json()["due_at_ms"].get<int64_t>();
  REQUIRE(http.post(url, job_doc(a2, 0, 0)).status == 201);
  REQUIRE(wait_until(20000, [&] { return calls_by_id(callback)[b2].size() == 1; }));
  calls = calls_by_id(callback);
  CHECK(calls[a2].size() == 1);
  CHECK(calls[b2][0] >= calls[a2][0]);
  CHECK(calls[b2][0] >= b2_due);
  CHECK(calls[b2][0] - calls[a2][0] > 2000);  // its own delay, not A2's delivery, set its time
  sleep_ms(500);
  CHECK(callback.count() == 4);
}

TEST_CASE("a dependency that dies: the waiter dies naming it, or runs with release") {
  TwoShards shards;
  CallbackServer callback;
  callback.set_responder([](const RecordedRequest& request, size_t) {
    if (request.path == "/fails") return CallbackAnswer(500, 0, "down");
    return CallbackAnswer(200);
  });
  DqdProcess dqd(one_timer_one_consumer(shards.names()));
  Topic fails = plain_topic("fails", callback.url("/fails"));
  fails.max_attempts = 1;
  add_topic(dqd, fails);
  add_topic(dqd, plain_topic("strict", callback.url()));  // on_dependency_dead: dead (default)
  Topic lenient = plain_topic("lenient", callback.url());
  lenient.on_dependency_dead = "release";
  add_topic(dqd, lenient);
  dqd.start();
  HttpClient http;
  Json topic = http.get(dqd.base_url() + "/v1/topics/strict").json();
  CHECK(topic["on_dependency_dead"] == "dead");
  CHECK(http.get(dqd.base_url() + "/v1/topics/lenient").json()["on_dependency_dead"] == "release");

  const std::string a = id_on(shards, "fails", "a", 0);
  const std::string strict_b = id_on(shards, "strict", "sb", 1);
  const std::string lenient_b = id_on(shards, "lenient", "lb", 1);
  REQUIRE(http.post(dqd.jobs_url("strict"),
                    Json{{"id", strict_b}, {"body", 1}, {"after", after({{"fails", a}})}}.dump())
              .status == 201);
  REQUIRE(http.post(dqd.jobs_url("lenient"),
                    Json{{"id", lenient_b}, {"body", 1}, {"after", after({{"fails", a}})}}.dump())
              .status == 201);
  REQUIRE(http.post(dqd.jobs_url("fails"), job_doc(a, 0, 0)).status == 201);
  REQUIRE(wait_until(20000, [&] {
    return http.get(dqd.jobs_url("strict") + "/" + strict_b).json().value("state", "") == "dead";
  }));
  Json dead = get_job(http, dqd, "strict", strict_b);
  std::string reason = dead.value("last_error", "");
  CHECK_MESSAGE(reason.find("dependency fails/" + a + " died") != std::string::npos, reason);
  CHECK(dead["attempts"] == 0);
  REQUIRE(wait_until(20000, [&] { return calls_by_id(callback)[lenient_b].size() == 1; }));
  auto calls = calls_by_id(callback);
  CHECK(calls[strict_b].empty());
  CHECK(calls[a].size() == 1);
  CHECK(calls[lenient_b][0] >= calls[a][0]);

  // A dependency dead before the waiter is added (a dead letter here): the
  // same, at once.
  const std::string late_b = id_on(shards, "strict", "late", 0);
  REQUIRE(http.post(dqd.jobs_url("strict"),
                    Json{{"id", late_b}, {"body", 1}, {"after", after({{"fails", a}})}}.dump())
              .status == 201);
  REQUIRE(wait_until(20000, [&] {
    return http.get(dqd.jobs_url("strict") + "/" + late_b).json().value("state", "") == "dead";
  }));
}

TEST_CASE("after: bad input is a 400; a waiting job deleted, updated, run now, expired") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  add_topic(dqd, plain_topic("t", callback.url()));
  dqd.start();
  HttpClient http;
  const std::string url = dqd.jobs_url("t");
  auto refused = [&](const Json& list, const std::string& words) {
    HttpResult r = http.post(url, Json{{"id", "b"}, {"body", 1}, {"after", list}}.dump());
    CHECK_MESSAGE(r.status == 400, list.dump() << " -> " << r.status << " " << r.body);
    CHECK_MESSAGE(r.json().value("error", "").find(words) != std::string::npos, r.body);
    CHECK(http.get(url + "/b").status == 404);
  };
  refused(after({{"t", "b"}}), "cannot wait for itself");
  refused(after({{"nope", "a"}}), "unknown topic 'nope'");
  Json many = Json::array();
  for (int i = 0; i < 21; ++i) many.push_back(Json{{"topic", "t"}, {"id", std::to_string(i)}});
  refused(many, "at most 20");
  refused(Json{{"topic", "t"}, {"id", "a"}}, "must be an array");
  refused(Json::array({"t/a"}), "after[0]");
  refused(Json::array({Json{{"topic", "t"}}}), "after[0]: topic (a string) and id");
  refused(Json::array({Json{{"topic", "t"}, {"id", "a"}, {"x", 1}}}), "unknown field 'x'");
  refused(Json::array({Json{{"topic", "t"}, {"id", ""}}}), "is not valid");
  // Twenty is fine.
  many.erase(many.begin());
  CHECK(http.post(url, Json{{"id", "b"}, {"body", 1}, {"after", many}}.dump()).status == 201);
  CHECK(get_job(http, dqd, "t", "b")["waiting"]["after"].size() == 20);
  // A waiting job: update is refused (409), run now releases it, delete works.
  CHECK(http.request("PUT", url + "/b", Json{{"delay", 5}}.dump()).status == 409);
  REQUIRE(http.post(url, Json{{"id", "c"}, {"body", 1}, {"after", after({{"t", "x"}})}}.dump())
              .status == 201);
  CHECK(http.request("DELETE", url + "/c", "").status == 204);
  CHECK(http.get(url + "/c").status == 404);
  // A dependency deleted: its waiter dies (on_dependency_dead dead), naming it.
  REQUIRE(http.post(url, job_doc("x2", 1, 3600)).status == 201);
  REQUIRE(http.post(url, Json{{"id", "c2"}, {"body", 1}, {"after", after({{"t", "x2"}})}}.dump())
              .status == 201);
  CHECK(http.request("DELETE", url + "/x2", "").status == 204);
  REQUIRE(wait_until(10000, [&] { return get_job(http, dqd, "t", "c2")["state"] == "dead"; }));
  CHECK(get_job(http, dqd, "t", "c2")["last_error"].get<std::string>().find(
            "dependency t/x2 was deleted") != std::string::npos);
  // A waiter for a job that never comes expires at its own ttl.
  REQUIRE(
      http.post(
              url,
              Json{{"id", "e"}, {"body", 1}, {"ttl", 1}, {"after", after({{"t", "never"}})}}.dump())
          .status == 201);
  CHECK(get_job(http, dqd, "t", "e")["state"] == "waiting");
  REQUIRE(wait_until(10000, [&] { return http.get(url + "/e").status == 404; }));
  HttpResult ran = http.post(url + "/b/run", "");
  CHECK(ran.status == 200);
  REQUIRE(wait_until(10000, [&] { return callback.count() == 1; }));
  CHECK(callback.requests()[0].header("x-dq-id") == "b");
}

// Two shards, a dqd (one timer, one consumer) and B added after A, A on the
// other shard and not added yet: the crash cases below.
struct WaiterOnOtherShard {
  TwoShards shards;
  CallbackServer callback;
  DqdProcess dqd{one_timer_one_consumer(shards.names())};
  HttpClient http;
  std::string url, a, b;

  WaiterOnOtherShard() {
    add_topic(dqd, plain_topic("t", callback.url()));
    dqd.start();
    url = dqd.jobs_url("t");
    a = id_on(shards, "t", "a", 1);
    b = id_on(shards, "t", "b", 0);
    REQUIRE(
        http.post(url, Json{{"id", b}, {"body", 1}, {"after", after({{"t", a}})}}.dump()).status ==
        201);
  }
  // Waits for the master to respawn the child titled `title` that replaced `dead`.
  bool respawned(const std::string& title, pid_t dead) {
    return wait_until(30000, [&] {
      auto now = children_titled(dqd.pid(), title);
      return now.size() == 1 && now[0] != dead;
    });
  }
  // Stops the releaser (in dq-redis-checker), adds A and waits until A is
  // acked, so only the ack's own event can release B. The checker's pid.
  pid_t ack_a_with_releaser_stopped() {
    pid_t checker = only_child_titled(dqd, "dq-redis-checker");
    REQUIRE(kill(checker, SIGSTOP) == 0);
    REQUIRE(http.post(url, job_doc(a, 0, 0)).status == 201);
    REQUIRE(wait_until(20000, [&] { return http.get(url + "/" + a).status == 404; }));
    return checker;
  }
  // B is called once, after A's one call: the calls, for a message.
  std::map<std::string, std::vector<int64_t>> b_called_once_after_a() {
    REQUIRE(wait_until(30000, [&] { return calls_by_id(callback)[b].size() == 1; }));
    sleep_ms(1500);
    auto calls = calls_by_id(callback);
    CHECK(calls[a].size() == 1);
    CHECK(calls[b].size() == 1);
    CHECK(calls[b][0] >= calls[a][0]);
    return calls;
  }
};

TEST_CASE("the releaser killed across the ack: the waiter still runs, once") {
  WaiterOnOtherShard w;
  pid_t checker = w.ack_a_with_releaser_stopped();
  sleep_ms(500);
  CHECK(calls_by_id(w.callback)[w.b].empty());
  CHECK(get_job(w.http, w.dqd, "t", w.b)["state"] == "waiting");
  REQUIRE(kill(checker, SIGKILL) == 0);
  REQUIRE(w.respawned("dq-redis-checker", checker));
  w.b_called_once_after_a();
}

// The ack and the event for the waiters are one script (ack.lua): a consumer
// killed the moment after it acked leaves nothing half done. The releaser
// (in the checker) is stopped across the ack and the kill, so the waiter can
// only be released after the consumer died: the respawned consumer calls it.
TEST_CASE("the consumer killed right after the ack: the waiter still runs, once") {
  WaiterOnOtherShard w;
  pid_t consumer = only_child_titled(w.dqd, "dq-consume");
  // A's callback answers; the moment its job is gone (acked), the consumer dies.
  pid_t checker = w.ack_a_with_releaser_stopped();
  REQUIRE(kill(consumer, SIGKILL) == 0);
  CHECK(get_job(w.http, w.dqd, "t", w.b)["state"] == "waiting");
  REQUIRE(kill(checker, SIGCONT) == 0);
  REQUIRE(w.respawned("dq-consume", consumer));
  auto calls = w.b_called_once_after_a();
  MESSAGE("consumer killed after A's ack, releaser stopped meanwhile; B called "
          << calls[w.b][0] - calls[w.a][0] << " ms after A, once");
}

TEST_CASE("50 pairs over two shards, added in random order: each waiter once, after its job") {
  TwoShards shards;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer(shards.names()));
  add_topic(dqd, plain_topic("t", callback.url()));
  dqd.start();
  HttpClient http;
  const std::string url = dqd.jobs_url("t");
  std::mt19937 random(42);
  struct Add {
    std::string doc;
  };
  std::vector<Add> adds;
  std::vector<std::pair<std::string, std::string>> pairs;
  int cross = 0;
  for (int i = 0; i < 50; ++i) {
    std::string a = "a" + std::to_string(i), b = "b" + std::to_string(i);
    cross += home_of(shards, "t", a) != home_of(shards, "t", b);
    pairs.emplace_back(a, b);
    double delay = (random() % 2000) / 1000.0;
    adds.push_back({job_doc(a, i, delay)});
    adds.push_back({Json{{"id", b}, {"body", i}, {"after", after({{"t", a}})}}.dump()});
  }
  CHECK(cross > 10);
  std::shuffle(adds.begin(), adds.end(), random);
  for (const Add& add : adds) REQUIRE(http.post(url, add.doc).status == 201);
  REQUIRE(wait_until(60000, [&] { return callback.count() >= 100; }));
  sleep_ms(1500);
  auto calls = calls_by_id(callback);
  CHECK(callback.count() == 100);
  std::vector<int64_t> gaps;
  for (const auto& [a, b] : pairs) {
    REQUIRE_MESSAGE(calls[a].size() == 1, a);
    REQUIRE_MESSAGE(calls[b].size() == 1, b);
    CHECK_MESSAGE(calls[b][0] >= calls[a][0], b);
    gaps.push_back(calls[b][0] - calls[a][0]);
  }
  std::sort(gaps.begin(), gaps.end());
  MESSAGE("waiter after its job: median " << gaps[gaps.size() / 2] << " ms, max " << gaps.back()
                                          << " ms (" << cross << " of 50 pairs across shards)");
}

TEST_CASE("dqctl: add --after, job get and jobs list --state waiting, topic --on-dependency-dead") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(one_timer_one_consumer({redis.address()}));
  add_topic(dqd, plain_topic("t", callback.url()));
  dqd.start();
  auto dqctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-c", dqd.config_path(), "-s", dqd.base_url()});
    return run_dqctl(args, dqd.dir(), "", dqd.dir());
  };
  auto added = dqctl({"add", "t", "b", "{}", "--after", "t/a 1", "--after", "t/a2"});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  auto got = dqctl({"get", "t", "b"});
  CHECK_MESSAGE(got.out.find("state:    waiting") != std::string::npos, got.out);
  CHECK_MESSAGE(got.out.find("waiting:  dependencies") != std::string::npos, got.out);
  CHECK_MESSAGE(got.out.find("t/a 1, t/a2") != std::string::npos, got.out);
  auto listed = dqctl({"jobs", "list", "t", "--state", "waiting", "--json"});
  CHECK_MESSAGE(Json::parse(listed.out, nullptr, false)["total"] == 1, listed.out);
  auto bad = dqctl({"add", "t", "c", "{}", "--after", "nope"});
  CHECK(bad.exit_code != 0);
  auto set = dqctl({"topic", "set", "t", "--on-dependency-dead", "release"});
  CHECK_MESSAGE(set.exit_code == 0, set.err);
  auto shown = dqctl({"topic", "show", "t"});
  CHECK_MESSAGE(shown.out.find("on_dependency_dead: release") != std::string::npos, shown.out);
  CHECK(dqctl({"topic", "set", "t", "--on-dependency-dead", "maybe"}).exit_code != 0);
}

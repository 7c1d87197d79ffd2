// The listing routes end to end: a real dqd on two real redis-servers, jobs
// added over HTTP, then GET /v1/topics, /v1/topics/{t}/stats and
// /v1/topics/{t}/jobs?state= (bad input: 400 JSON, unknown topic: 404 JSON),
// the same through libdqclient, and `dqctl topic stats` / `dqctl jobs list`;
// finally a shard killed is named as unreachable by all three.
#include <doctest/doctest.h>
#include <dq/client.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "tests/support/dqd_process.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::contains;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::RunResult;
using dq::test::TestRedis;

namespace dc = dq::client;

namespace {

struct World {
  World() {
    dq::test::DqdOptions options;
    options.shards = {a.address(), b.address()};
    options.legacy = false;
    dqd = std::make_unique<DqdProcess>(options);
    dqd->add_topic("orders");
    dqd->add_topic("orders_eu");
    dqd->add_topic("billing");
    dq::Topic billing = *dqd->registry().get_topic("billing");
    billing.online = false;
    REQUIRE(dqd->registry().update_topic(billing).is_ok());
    dqd->start();
  }

  std::string url(const std::string& path) const { return dqd->base_url() + path; }

  RunResult dqctl(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-c", dqd->config_path()});
    return dq::test::run_dqctl(args, dqd->dir(), "", dqd->dir());
  }

  TestRedis a, b;
  std::unique_ptr<DqdProcess> dqd;
};

std::vector<std::string> ids_of(const Json& page) {
  std::vector<std::string> ids;
  for (const auto& job : page["jobs"]) {
    ids.push_back(job["id"].get<std::string>());
  }
  return ids;
}

}  // namespace

TEST_CASE("topics, stats and job listings over HTTP, libdqclient and dqctl") {
  World world;
  HttpClient http;
  // Delayed jobs due in 100 s, 200 s, ... 500 s: listed in that order.
  for (int i = 1; i <= 5; ++i) {
    auto added = http.post(world.dqd->jobs_url("orders"),
                           R"({"id":"j)" + std::to_string(i) + R"(","body":{"n":)" +
                               std::to_string(i) + R"(},"delay":)" + std::to_string(i * 100) + "}");
    REQUIRE_MESSAGE(added.status == 201, added.body);
  }
  REQUIRE(
      http.post(world.dqd->jobs_url("orders_eu"), R"({"id":"e1","body":1,"delay":60})").status ==
      201);

  SUBCASE("GET /v1/topics: registered topics with counts, search, paging") {
    auto all = http.get(world.url("/v1/topics"));
    REQUIRE_MESSAGE(all.status == 200, all.body);
    Json list = all.json();
    CHECK(list["total"] == 3);
    REQUIRE(list["topics"].size() == 3);
    CHECK(list["topics"][0]["name"] == "billing");
    CHECK(list["topics"][0]["online"] == false);
    CHECK(list["topics"][0]["now"]["delayed"] == 0);
    CHECK(list["topics"][1]["name"] == "orders");
    CHECK(list["topics"][1]["online"] == true);
    CHECK(list["topics"][1]["now"]["delayed"] == 5);
    CHECK(list["topics"][2]["now"]["delayed"] == 1);
    CHECK(list["unreachable_shards"].empty());

    Json found = http.get(world.url("/v1/topics?search=ORD")).json();
    CHECK(found["total"] == 2);
    CHECK(found["topics"][0]["name"] == "orders");
    Json paged = http.get(world.url("/v1/topics?offset=1&limit=1")).json();
    CHECK(paged["total"] == 3);
    REQUIRE(paged["topics"].size() == 1);
    CHECK(paged["topics"][0]["name"] == "orders");
    Json none = http.get(world.url("/v1/topics?search=%27%20OR%201%3D1--")).json();
    CHECK(none["total"] == 0);

    for (const char* bad : {"?limit=0", "?limit=501", "?limit=x", "?offset=-1"}) {
      auto refused = http.get(world.url(std::string("/v1/topics") + bad));
      CHECK_MESSAGE(refused.status == 400, bad);
      CHECK(refused.json()["error"].is_string());
    }
    CHECK(http.post(world.url("/v1/topics"), "{}").status == 405);
  }

  SUBCASE("GET /v1/topics/{t}: the topic's settings, the same fields as the admin API and dqctl") {
    auto answer = http.get(world.url("/v1/topics/orders"));
    REQUIRE_MESSAGE(answer.status == 200, answer.body);
    Json topic = answer.json();
    CHECK(topic["name"] == "orders");
    CHECK(topic["online"] == true);
    for (const char* field :
         {"callback_url", "timeout_ms", "max_attempts", "retry_ms", "max_deferrals", "dead_on",
          "retry_jitter", "circuit_breaker", "circuit_failures", "circuit_open_ms", "max_in_flight",
          "max_rate", "max_burst", "signing_secret", "signing_public_key"}) {
      CHECK_MESSAGE(topic.contains(field), field);
    }
    CHECK(topic["dead_callback"] == "");
    auto unknown = http.get(world.url("/v1/topics/nope"));
    CHECK(unknown.status == 404);
    CHECK(contains(unknown.json()["error"].get<std::string>(), "unknown topic"));
    auto wrong = http.request("POST", world.url("/v1/topics/orders"), "{}");
    CHECK(wrong.status == 405);  // GET, PUT, PATCH and DELETE are its methods
    CHECK(wrong.headers["allow"] == "GET, PUT, PATCH, DELETE");
  }

  SUBCASE("GET /v1/topics/{t}/stats") {
    auto answer = http.get(world.url("/v1/topics/orders/stats"));
    REQUIRE_MESSAGE(answer.status == 200, answer.body);
    Json stats = answer.json();
    CHECK(stats["topic"] == "orders");
    CHECK(stats["now"]["delayed"] == 5);
    CHECK(stats["now"]["ready"] == 0);
    CHECK(stats["total"]["added"] == 5);
    REQUIRE(stats["per_minute"].size() == 60);
    int64_t minute_adds = 0;
    for (const auto& row : stats["per_minute"]) {
      minute_adds += row["added"].get<int64_t>();
    }
    CHECK(minute_adds == 5);
    REQUIRE(stats["per_day"].size() == 30);
    CHECK(stats["per_day"][29]["added"] == 5);

    auto unknown = http.get(world.url("/v1/topics/nope/stats"));
    CHECK(unknown.status == 404);
    CHECK(contains(unknown.json()["error"].get<std::string>(), "unknown topic"));
    CHECK(http.get(world.url("/v1/topics/bad%20name/stats")).status == 404);
    CHECK(http.del(world.url("/v1/topics/orders/stats")).status == 405);
  }

  SUBCASE("GET /v1/topics/{t}/jobs?state=") {
    auto first = http.get(world.url("/v1/topics/orders/jobs?state=delayed&limit=2"));
    REQUIRE_MESSAGE(first.status == 200, first.body);
    Json page = first.json();
    CHECK(ids_of(page) == std::vector<std::string>{"j1", "j2"});
    CHECK(page["total"] == 5);
    CHECK(page["truncated"] == false);
    CHECK(page["jobs"][0]["state"] == "delayed");
    CHECK(page["jobs"][0]["attempts"] == 0);
    CHECK(page["jobs"][0]["due_at_ms"].get<int64_t>() <
          page["jobs"][1]["due_at_ms"].get<int64_t>());
    CHECK(page["jobs"][0]["shard"].is_string());
    Json next = http.get(world.url("/v1/topics/orders/jobs?state=delayed&offset=2&limit=2")).json();
    CHECK(ids_of(next) == std::vector<std::string>{"j3", "j4"});
    Json ready = http.get(world.url("/v1/topics/orders/jobs?state=ready")).json();
    CHECK(ready["jobs"].empty());
    CHECK(ready["total"] == 0);

    for (const char* bad : {"", "?state=dead", "?state=delayed&limit=501", "?state=delayed&limit=0",
                            "?state=delayed&offset=x"}) {
      auto refused = http.get(world.url(std::string("/v1/topics/orders/jobs") + bad));
      CHECK_MESSAGE(refused.status == 400, bad);
      CHECK(refused.json()["error"].is_string());
    }
    auto unknown = http.get(world.url("/v1/topics/nope/jobs?state=delayed"));
    CHECK(unknown.status == 404);
    CHECK(unknown.json()["error"].is_string());
    CHECK(http.del(world.url("/v1/topics/orders/jobs")).status == 405);

    // A search by id prefix: only matching ids, total the matches found.
    for (const char* id : {"vip-1", "vip-2"}) {
      REQUIRE(http.post(world.dqd->jobs_url("orders"),
                        std::string(R"({"id":")") + id + R"(","body":0,"delay":50})")
                  .status == 201);
    }
    Json vip = http.get(world.url("/v1/topics/orders/jobs?state=delayed&id_prefix=vip-")).json();
    auto vip_ids = ids_of(vip);  // due in the same ms, maybe: either order
    std::sort(vip_ids.begin(), vip_ids.end());
    CHECK(vip_ids == std::vector<std::string>{"vip-1", "vip-2"});
    CHECK(vip["total"] == 2);
    CHECK(vip["id_prefix"] == "vip-");
    Json js =
        http.get(world.url("/v1/topics/orders/jobs?state=delayed&id_prefix=j&limit=1")).json();
    CHECK(ids_of(js) == std::vector<std::string>{"j1"});
    CHECK(js["total"] == 5);
    Json everything = http.get(world.url("/v1/topics/orders/jobs?state=delayed")).json();
    CHECK(everything["total"] == 7);
    CHECK_FALSE(everything.contains("id_prefix"));
    auto control = http.get(world.url("/v1/topics/orders/jobs?state=delayed&id_prefix=a%0Ab"));
    CHECK(control.status == 400);
    CHECK(contains(control.json()["error"].get<std::string>(), "id_prefix"));
    auto longer = http.get(
        world.url("/v1/topics/orders/jobs?state=delayed&id_prefix=" + std::string(257, 'x')));
    CHECK(longer.status == 400);
    RunResult searched = world.dqctl(
        {"jobs", "list", "orders", "--state", "delayed", "--id-prefix", "vip-", "--json"});
    REQUIRE_MESSAGE(searched.exit_code == 0, searched.err);
    CHECK(Json::parse(searched.out)["total"] == 2);
    CHECK(Json::parse(searched.out)["jobs"].size() == 2);
    CHECK(world.dqctl({"jobs", "list", "orders", "--id-prefix", std::string(300, 'x')}).exit_code ==
          2);
  }

  SUBCASE("libdqclient: list_topics, topic_stats, list_jobs") {
    dc::Client client({.servers = {"127.0.0.1:" + std::to_string(world.dqd->http_port())}});
    auto topics = client.list_topics("orders");
    REQUIRE_MESSAGE(topics.ok(), topics.error().message);
    CHECK(topics->total == 2);
    REQUIRE(topics->topics.size() == 2);
    CHECK(topics->topics[0].name == "orders");
    CHECK(topics->topics[0].online);
    REQUIRE(topics->topics[0].now.has_value());
    CHECK(topics->topics[0].now->delayed == 5);

    auto stats = client.topic_stats("orders");
    REQUIRE_MESSAGE(stats.ok(), stats.error().message);
    CHECK(stats->now.delayed == 5);
    CHECK(stats->total.added == 5);
    CHECK(stats->per_minute.size() == 60);
    CHECK(stats->per_day.size() == 30);
    CHECK(stats->per_day.back().second.added == 5);

    auto jobs = client.list_jobs("orders", dc::JobState::Delayed, 1, 2);
    REQUIRE_MESSAGE(jobs.ok(), jobs.error().message);
    CHECK(jobs->total == 5);
    REQUIRE(jobs->jobs.size() == 2);
    CHECK(jobs->jobs[0].id == "j2");
    CHECK(jobs->jobs[0].state == dc::JobState::Delayed);
    CHECK_FALSE(jobs->jobs[0].shard.empty());

    CHECK(client.list_jobs("orders", dc::JobState::Dead).error().code ==
          dc::ErrorCode::InvalidArgument);
    CHECK(client.list_jobs("orders", dc::JobState::Ready, 0, 501).error().code ==
          dc::ErrorCode::InvalidArgument);
    CHECK(client.topic_stats("nope").error().code == dc::ErrorCode::NotFound);
    CHECK(client.list_jobs("nope", dc::JobState::Ready).error().code == dc::ErrorCode::NotFound);
  }

  SUBCASE("dqctl topic stats and jobs list") {
    RunResult table = world.dqctl({"topic", "stats"});
    REQUIRE_MESSAGE(table.exit_code == 0, table.err);
    CHECK(contains(table.out, "DELAYED"));
    CHECK(contains(table.out, "billing"));
    CHECK(contains(table.out, "offline"));
    RunResult one = world.dqctl({"--json", "topic", "stats", "orders"});
    REQUIRE_MESSAGE(one.exit_code == 0, one.err);
    Json stats = Json::parse(one.out);
    CHECK(stats["now"]["delayed"] == 5);
    CHECK(stats["per_day"][29]["added"] == 5);
    RunResult text = world.dqctl({"topic", "stats", "orders"});
    REQUIRE(text.exit_code == 0);
    CHECK(contains(text.out, "delayed 5"));
    RunResult unknown = world.dqctl({"topic", "stats", "nope"});
    CHECK(unknown.exit_code == 1);
    CHECK(contains(unknown.err, "unknown topic 'nope'"));

    RunResult listed =
        world.dqctl({"jobs", "list", "orders", "--state", "delayed", "--limit", "3"});
    REQUIRE_MESSAGE(listed.exit_code == 0, listed.err);
    CHECK(contains(listed.out, "j1"));
    CHECK(contains(listed.out, "j3"));
    CHECK_FALSE(contains(listed.out, "j4"));
    CHECK(contains(listed.out, "5 delayed in orders"));
    RunResult json =
        world.dqctl({"jobs", "list", "orders", "--state=delayed", "--offset", "4", "--json"});
    REQUIRE_MESSAGE(json.exit_code == 0, json.err);
    CHECK(ids_of(Json::parse(json.out)) == std::vector<std::string>{"j5"});
    RunResult missing = world.dqctl({"jobs", "list", "nope", "--state", "ready"});
    CHECK(missing.exit_code == 1);
    CHECK(contains(missing.err, "unknown topic 'nope'"));
    // Without --state: every state, delayed first, paged over the whole.
    RunResult every = world.dqctl({"jobs", "list", "orders", "--limit", "2"});
    REQUIRE_MESSAGE(every.exit_code == 0, every.err);
    CHECK(contains(every.out, "j1"));
    CHECK_FALSE(contains(every.out, "j3"));
    CHECK(contains(every.out,
                   "2 shown (from 0), 5 pending in orders (5 delayed, 0 ready, 0 working, 0 "
                   "retrying, 0 waiting)"));
    RunResult every_json = world.dqctl({"jobs", "list", "orders", "--offset", "3", "--json"});
    REQUIRE_MESSAGE(every_json.exit_code == 0, every_json.err);
    Json all_states = Json::parse(every_json.out);
    CHECK(ids_of(all_states) == std::vector<std::string>{"j4", "j5"});
    CHECK(all_states["total"] == 5);
    CHECK(all_states["by_state"]["delayed"] == 5);
    CHECK(all_states["by_state"]["ready"] == 0);
    CHECK_FALSE(all_states.contains("state"));
    CHECK(world.dqctl({"jobs", "list", "orders", "--state", "dead"}).exit_code == 2);
    CHECK(world.dqctl({"jobs", "list", "orders", "--state", "ready", "--limit", "501"}).exit_code ==
          2);
    RunResult help = world.dqctl({"jobs", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(contains(help.out, "jobs list TOPIC [--state"));
    RunResult topic_help = world.dqctl({"topic", "stats", "--help"});
    CHECK(topic_help.exit_code == 0);
    CHECK(contains(topic_help.out, "topic stats [NAME]"));
  }

  SUBCASE("a killed shard is named, the other's numbers still answer") {
    world.b.kill9();
    Json stats = http.get(world.url("/v1/topics/orders/stats")).json();
    REQUIRE(stats["unreachable_shards"].size() == 1);
    CHECK(stats["unreachable_shards"][0] == world.b.address());
    Json page = http.get(world.url("/v1/topics/orders/jobs?state=delayed")).json();
    CHECK(page["unreachable_shards"][0] == world.b.address());
    CHECK(page["jobs"].size() == page["total"].get<size_t>());
    Json topics = http.get(world.url("/v1/topics")).json();
    CHECK(topics["unreachable_shards"][0] == world.b.address());
    RunResult table = world.dqctl({"topic", "stats"});
    CHECK(table.exit_code == 0);
    CHECK(contains(table.err, world.b.address()));
    RunResult listed = world.dqctl({"jobs", "list", "orders", "--state", "delayed"});
    CHECK(listed.exit_code == 0);
    CHECK(contains(listed.err, world.b.address()));
  }
}

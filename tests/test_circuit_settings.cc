// The circuit breaker's topic settings and where its state shows: registry
// validation, `dqctl topic add|set|show` flags and JSON, the admin topic
// form, `dqctl circuits` and /metrics, against a real redis-server holding a
// circuit opened by the real scripts.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/redis/redis_sync.h"
#include "common/registry/registry.h"
#include "common/registry/topic_fields.h"
#include "common/store/circuit_store.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::test::contains;
using dq::test::RunResult;

namespace {

// dqctl with a temp config whose one shard is `shard` (none listens by
// default), writing this host's SQLite alone ([registry] shared = no).
struct Ctl {
  explicit Ctl(const std::string& shard = "127.0.0.1:1") {
    char pattern[] = "/tmp/dq-circuit-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir = pattern;
    config = dir + "/dq.ini";
    std::ofstream(config) << "[sqlite]\npath = dq.db\n[log]\ndir = log\n[registry]\nshared = no\n"
                          << "[redis]\nshards = " << shard
                          << "\nstart_local = no\nconnect_timeout_ms = 500\n";
  }
  ~Ctl() { std::filesystem::remove_all(dir); }
  RunResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-c", config});
    return dq::test::run_dqctl(args, dir);
  }
  dq::Json json(std::vector<std::string> args) const {
    args.insert(args.begin(), "--json");
    RunResult result = run(args);
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    return dq::Json::parse(result.out);
  }
  std::string dir;
  std::string config;
};

// Opens the circuit of `receiver` as three failed calls would.
void open_circuit(const dq::ShardAddress& shard, const std::string& receiver) {
  dq::RedisConnection redis(shard, 1000, 1000);
  for (int i = 0; i < 3; ++i) {
    auto reply =
        redis.run(dq::circuit_report_call(receiver, true, 3, 10000, "HTTP 503", "test", 5000));
    REQUIRE(reply.is_ok());
  }
}

}  // namespace

TEST_CASE("defaults, and each bad value refused with its field named") {
  dq::Topic topic;
  topic.name = "t";
  topic.callback_url = "http://127.0.0.1:9/x";
  CHECK(topic.circuit_breaker);
  CHECK(topic.circuit_failures == 5);
  CHECK(topic.circuit_open_ms == 10000);
  CHECK(dq::validate_topic(topic).is_ok());
  topic.circuit_failures = 0;
  CHECK(dq::validate_topic(topic).message() == "circuit_failures: 0 must be from 1 to 1000");
  topic.circuit_failures = 1001;
  CHECK(dq::validate_topic(topic).message() == "circuit_failures: 1001 must be from 1 to 1000");
  topic.circuit_failures = 5;
  topic.circuit_open_ms = 99;
  CHECK(dq::validate_topic(topic).message() ==
        "circuit_open_ms: 99 must be from 100 to 3600000 (one hour)");
}

TEST_CASE("dqctl topic add|set|show: the circuit flags, same names as the JSON") {
  Ctl ctl;
  RunResult added = ctl.run({"topic", "add", "orders", "--callback", "http://127.0.0.1:8080/x"});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  dq::Json shown = ctl.json({"topic", "show", "orders"});
  CHECK(shown["circuit_breaker"] == true);
  CHECK(shown["circuit_failures"] == 5);
  CHECK(shown["circuit_open_ms"] == 10000);

  RunResult set = ctl.run({"topic", "set", "orders", "--circuit-breaker", "off",
                           "--circuit-failures", "7", "--circuit-open-ms", "2500"});
  REQUIRE_MESSAGE(set.exit_code == 0, set.err);
  shown = ctl.json({"topic", "show", "orders"});
  CHECK(shown["circuit_breaker"] == false);
  CHECK(shown["circuit_failures"] == 7);
  CHECK(shown["circuit_open_ms"] == 2500);
  RunResult human = ctl.run({"topic", "show", "orders"});
  CHECK(contains(human.out, "circuit_breaker: off"));
  CHECK(contains(human.out, "circuit_failures: 7"));
  CHECK(contains(human.out, "circuit_open_ms: 2500"));

  // Bad values: refused, nothing changed.
  RunResult zero = ctl.run({"topic", "set", "orders", "--circuit-failures", "0"});
  CHECK(zero.exit_code == 1);
  CHECK(contains(zero.err, "circuit_failures: 0 must be from 1 to 1000"));
  RunResult word = ctl.run({"topic", "set", "orders", "--circuit-breaker", "maybe"});
  CHECK(word.exit_code == 2);
  CHECK(contains(word.err, "--circuit-breaker 'maybe' must be on or off"));
  RunResult short_wait = ctl.run({"topic", "set", "orders", "--circuit-open-ms", "5"});
  CHECK(short_wait.exit_code == 1);
  CHECK(contains(short_wait.err, "circuit_open_ms"));
  shown = ctl.json({"topic", "show", "orders"});
  CHECK(shown["circuit_failures"] == 7);
  CHECK(shown["circuit_open_ms"] == 2500);
  CHECK(shown["circuit_breaker"] == false);
}

TEST_CASE("the topic fields take the circuit fields and name a bad one") {
  dq::Topic topic;
  topic.name = "t";
  CHECK(dq::apply_topic_fields(
            dq::Json{{"circuit_breaker", false}, {"circuit_failures", 9}, {"circuit_open_ms", 700}},
            &topic, 0)
            .is_ok());
  CHECK_FALSE(topic.circuit_breaker);
  CHECK(topic.circuit_failures == 9);
  CHECK(topic.circuit_open_ms == 700);
  dq::Status wrong = dq::apply_topic_fields(dq::Json{{"circuit_breaker", "yes"}}, &topic, 0);
  CHECK(wrong.message() == "circuit_breaker: must be true or false");
  CHECK(dq::field_of(wrong) == "circuit_breaker");
  wrong = dq::apply_topic_fields(dq::Json{{"circuit_failures", "9"}}, &topic, 0);
  CHECK(dq::field_of(wrong) == "circuit_failures");
}

TEST_CASE("dqctl circuits and /metrics show a circuit the scripts opened") {
  dq::test::TestRedis redis;
  open_circuit(redis.shard(), "r.example:80");
  Ctl ctl(redis.address());
  dq::Json listed = ctl.json({"circuits"});
  REQUIRE(listed["circuits"].size() == 1);
  const dq::Json& circuit = listed["circuits"][0];
  CHECK(circuit["receiver"] == "r.example:80");
  CHECK(circuit["state"] == "open");
  CHECK(circuit["failures"] == 3);
  CHECK(circuit["last_error"] == "HTTP 503");
  CHECK(circuit["open_ms"] == 10000);
  CHECK(circuit["since_ms"].get<int64_t>() > 0);
  CHECK(listed["unreachable_shards"].empty());
  RunResult table = ctl.run({"circuits"});
  CHECK(table.exit_code == 0);
  CHECK(contains(table.out, "r.example:80"));
  CHECK(contains(table.out, "open"));

  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  dq::test::DqdProcess dqd(options);
  dqd.start();
  auto page = dq::test::http_request("GET", dqd.base_url() + "/metrics");
  REQUIRE(page.status == 200);
  CHECK(contains(page.body, "dq_circuit_state{receiver=\"r.example:80\"} 2"));
  CHECK(contains(page.body, "dq_circuit_failures{receiver=\"r.example:80\"} 3"));
  CHECK(contains(page.body, "# TYPE dq_circuit_since_seconds gauge"));
}

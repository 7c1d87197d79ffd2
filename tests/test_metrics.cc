// /metrics: known traffic through two API workers and a reload is
// counted exactly, whichever worker answers and on every scrape; promtool
// accepts the page; the host series survive the reload.
#include <doctest/doctest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <regex>

#include "common/core/json.h"
#include "common/registry/registry.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::TestRedis;
using dq::test::wait_until;

namespace {

// The value of one sample line `name{labels} value`; -1 when absent.
double sample(const std::string& page, const std::string& series) {
  size_t at = 0;
  while ((at = page.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || page[at - 1] == '\n') {
      return std::stod(page.substr(at + series.size() + 1));
    }
    at += series.size();
  }
  return -1;
}

std::string scrape(const DqdProcess& dqd) {
  // A new connection each time, so the two API workers both get scrapes.
  auto reply = dq::test::http_request("GET", dqd.base_url() + "/metrics");
  REQUIRE(reply.status == 200);
  return reply.body;
}

void add_topic(DqdProcess& dqd, const std::string& name, const std::string& url, int max_attempts) {
  dq::Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.timeout_ms = 2000;
  topic.max_attempts = max_attempts;
  topic.circuit_breaker = false;  // "bad" fails on purpose: its jobs must die, not wait
  REQUIRE(dqd.registry().add_topic(topic).is_ok());
}

void check_counts(const std::string& page) {
  CAPTURE(page);
  CHECK(sample(page, "dq_jobs_added_total{topic=\"good\"}") == 90);
  CHECK(sample(page, "dq_jobs_added_total{topic=\"bad\"}") == 10);
  CHECK(sample(page, "dq_jobs_delivered_total{topic=\"good\"}") == 90);
  CHECK(sample(page, "dq_jobs_delivered_total{topic=\"bad\"}") == 0);
  CHECK(sample(page, "dq_jobs_dead_total{topic=\"bad\"}") == 10);
  CHECK(sample(page, "dq_delivery_failures_total{topic=\"bad\"}") == 10);
  CHECK(sample(page, "dq_jobs{topic=\"bad\",state=\"dead\"}") == 10);
  CHECK(sample(page, "dq_jobs{topic=\"good\",state=\"delayed\"}") == 0);
  CHECK(sample(page, "dq_metrics_queue_scrape_ok") == 1);
  CHECK(sample(page, "dq_http_requests_total{route=\"add\",code=\"201\"}") == 100);
  CHECK(sample(page, "dq_http_request_duration_seconds_count{route=\"add\",code=\"201\"}") == 100);
  CHECK(sample(page, "dq_delivery_duration_seconds_count{topic=\"good\"}") == 90);
  CHECK(sample(page, "dq_delivery_lateness_seconds_count{topic=\"bad\"}") == 10);
  CHECK(sample(page, "dq_children_running{role=\"server\"}") == 2);
}

}  // namespace

TEST_CASE("100 adds, 90 delivered, 10 dead: the same counts on every scrape, across a reload") {
  TestRedis redis;
  CallbackServer good;
  CallbackServer bad;
  bad.answer_with({}, 500);
  DqdOptions options;
  options.shards = {redis.address()};
  options.workers = 2;
  options.timers = 1;
  options.consumers = 1;
  DqdProcess dqd(options);
  add_topic(dqd, "good", good.url(), 3);
  add_topic(dqd, "bad", bad.url(), 1);
  dqd.start();

  for (int n = 0; n < 100; ++n) {
    std::string topic = n < 90 ? "good" : "bad";
    Json job{{"id", "m-" + std::to_string(n)}, {"body", n}, {"delay", 0}};
    auto reply = dq::test::http_request("POST", dqd.jobs_url(topic), job.dump());
    REQUIRE(reply.status == 201);
  }
  REQUIRE(good.wait_for(90, 15000));
  REQUIRE(bad.wait_for(10, 15000));
  REQUIRE(wait_until(
      10000, [&] { return sample(scrape(dqd), "dq_jobs{topic=\"bad\",state=\"dead\"}") == 10; }));

  std::string last;
  for (int n = 0; n < 6; ++n) {
    check_counts(last = scrape(dqd));
  }

  // promtool (Debian's prometheus package) lints the exposition format.
  std::string page_file = dqd.dir() + "/metrics.txt";
  std::ofstream(page_file) << last;
  auto lint =
      dq::test::run_program({"/bin/sh", "-c", "promtool check metrics < " + page_file}, dqd.dir());
  CAPTURE(lint.out);
  CAPTURE(lint.err);
  CHECK(lint.exit_code == 0);

  // A reload replaces every child; the counts stay the same.
  auto before = dq::test::children_titled(dqd.pid(), "dq-server_0");
  REQUIRE(kill(dqd.pid(), SIGUSR2) == 0);
  REQUIRE(wait_until(10000, [&] {
    auto now = dq::test::children_titled(dqd.pid(), "dq-server_0");
    return now.size() == 1 && now != before;
  }));
  REQUIRE(wait_until(5000, [&] {
    return dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200;
  }));
  for (int n = 0; n < 6; ++n) {
    check_counts(scrape(dqd));
  }

  // dqctl stats shows the same numbers.
  auto stats = dq::test::run_dqctl({"-c", dqd.config_path(), "--json", "stats"}, dqd.dir());
  REQUIRE(stats.exit_code == 0);
  std::map<std::string, Json> by_topic;
  for (const auto& topic : Json::parse(stats.out)) {
    by_topic[topic["topic"]] = topic;
  }
  CAPTURE(stats.out);
  REQUIRE(by_topic.count("good") == 1);
  REQUIRE(by_topic.count("bad") == 1);
  CHECK(by_topic["good"]["total"]["delivered"] == 90);
  CHECK(by_topic["bad"]["total"]["dead"] == 10);
  CHECK(by_topic["bad"]["now"]["dead"] == 10);
  auto table = dq::test::run_dqctl({"-c", dqd.config_path(), "stats", "bad"}, dqd.dir());
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("DELIVERED") != std::string::npos);
  CHECK(table.out.find("topic bad") != std::string::npos);
  CHECK(table.out.find("good") == std::string::npos);
  auto unknown = dq::test::run_dqctl({"-c", dqd.config_path(), "stats", "nosuchtopic"}, dqd.dir());
  CHECK(unknown.exit_code == 1);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("adds a full Redis refuses are counted per shard in dq_redis_command_errors_total") {
  TestRedis redis;
  CallbackServer callback;
  DqdOptions options;
  options.shards = {redis.address()};
  DqdProcess dqd(options);
  add_topic(dqd, "orders", callback.url(), 1);
  dqd.start();
  const std::string series = "dq_redis_command_errors_total{shard=\"" + redis.address() + "\"}";
  auto add = [&](const std::string& id) {
    Json job{{"id", id}, {"body", {{"n", 1}}}, {"delay", 3600}};
    return dq::test::http_request("POST", dqd.jobs_url("orders"), job.dump());
  };
  REQUIRE(add("before").status == 201);
  CHECK(sample(scrape(dqd), series) == -1);  // nothing has failed: no series yet

  // maxmemory reached under noeviction: Redis refuses every write with OOM,
  // before anything is written: 503 (docs/RELIABILITY.md).
  redis.command({"CONFIG", "SET", "maxmemory", "1"});
  for (int n = 0; n < 3; ++n) {
    auto refused = add("refused-" + std::to_string(n));
    CAPTURE(refused.body);
    CHECK(refused.status == 503);
    CHECK(refused.body.find("OOM") != std::string::npos);
  }
  // The API server's async connection once per add (the redis checker's
  // write probe, refused too, may add one a second).
  CHECK(sample(scrape(dqd), series) >= 3);

  redis.command({"CONFIG", "SET", "maxmemory", "0"});
  // A checker round that met the full shard is over by then.
  dq::test::sleep_ms(2500);
  double before = sample(scrape(dqd), series);
  CHECK(add("after").status == 201);
  CHECK(sample(scrape(dqd), series) == before);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("promtool is installed (the metrics test needs it)") {
  auto found = dq::test::run_program({"/bin/sh", "-c", "command -v promtool"}, "/tmp");
  CHECK(found.exit_code == 0);
}

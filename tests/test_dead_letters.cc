// End-to-end dead letters: a callback that always fails ends dead after its
// maximum (state dead, last error kept, alert mail queued), `dqctl dead list`
// shows it, `dqctl dead requeue` delivers it again, `dqctl dead purge` drops
// what is left.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/alerts/alert_outbox.h"
#include "common/core/json.h"
#include "tests/delivery_world.h"
#include "tests/support/dqd_process.h"
#include "tests/support/store_reads.h"

using dq::Json;
using dq::now_ms;
using dq::test::DeliveryWorld;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A config file dqctl can read, naming the world's Redis and registry.
std::string write_ctl_config(DeliveryWorld& world) {
  std::string path = world.dir() + "/dqctl.ini";
  std::ofstream out(path);
  out << "[redis]\nshards = " << world.redis().address() << "\nstart_local = no\n"
      << "[sqlite]\npath = dq.db\n[log]\ndir = log\n";
  return path;
}

int dqctl(const std::string& config, std::vector<std::string> args, std::string* output) {
  std::vector<std::string> argv = {std::string(DQ_BUILD_DIR) + "/dqctl", "-c", config};
  argv.insert(argv.end(), args.begin(), args.end());
  return dq::test::run_command(argv, output);
}

}  // namespace

TEST_CASE("always failing: dead after max attempts, alert queued, dqctl lists and requeues it") {
  DeliveryWorld world(100);
  auto topic = world.topic("doomed");
  topic.max_attempts = 3;
  topic.alert_emails = "ops@example.com,dev@example.com";
  world.add_topic(topic);
  world.callback().answer_with({}, 500);
  world.start_timer();
  world.start_consumer();
  world.add_job("doomed", "d1", now_ms(), "{\"k\":\"v\"}");

  REQUIRE(world.callback().wait_for(3, 5000));
  sleep_ms(1000);  // 1+3+5 units would bring a 4th call by now if it were not dead
  CHECK(world.callback().count() == 3);

  auto job = world.store().get("doomed", "d1");
  REQUIRE(job.is_ok());
  CHECK(job->state == dq::JobState::kDead);
  CHECK(std::string(dq::state_name(job->state)) == "dead");
  CHECK(job->attempts == 3);
  CHECK(job->last_error.find("HTTP 500") != std::string::npos);

  auto outbox = dq::AlertOutbox::open(world.config().sqlite_path);
  REQUIRE(outbox.is_ok());
  auto mails = (*outbox)->unsent(10);
  REQUIRE(mails.is_ok());
  REQUIRE(mails->size() == 1);
  CHECK((*mails)[0].topic == "doomed");
  CHECK((*mails)[0].job_id == "d1");
  CHECK((*mails)[0].recipients == "ops@example.com,dev@example.com");
  CHECK((*mails)[0].text.find("HTTP 500") != std::string::npos);
  CHECK_FALSE((*mails)[0].sent_at_ms.has_value());
  REQUIRE((*outbox)->mark_sent((*mails)[0].id, now_ms()).is_ok());
  CHECK((*outbox)->unsent(10)->empty());

  std::string config = write_ctl_config(world);
  std::string output;
  REQUIRE(dqctl(config, {"--json", "dead", "list", "doomed"}, &output) == 0);
  Json listed = Json::parse(output);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["id"] == "d1");
  CHECK(listed[0]["attempts"] == 3);
  CHECK(listed[0]["last_error"].get<std::string>().find("HTTP 500") != std::string::npos);
  REQUIRE(dqctl(config, {"dead", "list", "doomed"}, &output) == 0);
  CHECK(output.find("d1") != std::string::npos);

  // The callback works again: a requeue delivers it, from attempt 1.
  world.callback().answer_with({}, 200);
  CHECK(dqctl(config, {"dead", "requeue", "doomed", "nope"}, &output) == 1);
  REQUIRE(dqctl(config, {"dead", "requeue", "doomed", "d1"}, &output) == 0);
  CHECK(output.find("requeued 1") != std::string::npos);
  REQUIRE(world.callback().wait_for(4, 5000));
  auto again = world.callback().requests()[3];
  CHECK(again.header("x-dq-id") == "d1");
  CHECK(again.header("x-dq-attempt") == "1");
  CHECK(Json::parse(again.body)["body"]["k"] == "v");
  sleep_ms(300);
  CHECK(world.store().get("doomed", "d1").status().code() == dq::Code::kNotFound);
  CHECK(*dq::test::dead_count(world.store(), "doomed") == 0);
}

TEST_CASE("default max attempts, a refused connection fails, requeue --all and purge") {
  DeliveryWorld world(100);
  world.config().default_max_attempts = 2;
  auto topic = world.topic("nowhere");
  topic.callback_url = "http://127.0.0.1:" + std::to_string(dq::test::free_port()) + "/x";
  world.add_topic(topic);
  world.start_timer();
  world.start_consumer();
  for (int i = 0; i < 5; ++i) {
    world.add_job("nowhere", "n" + std::to_string(i), now_ms());
  }

  int64_t deadline = now_ms() + 5000;
  while (now_ms() < deadline && *dq::test::dead_count(world.store(), "nowhere") < 5) {
    sleep_ms(50);
  }
  REQUIRE(*dq::test::dead_count(world.store(), "nowhere") == 5);
  auto job = world.store().get("nowhere", "n0");
  REQUIRE(job.is_ok());
  CHECK(job->attempts == 2);
  MESSAGE("last error of a refused connection: ", job->last_error);
  CHECK_FALSE(job->last_error.empty());
  // No emails on the topic: the alerts are queued all the same, for the
  // global recipients and the webhook (dq-redis-checker groups and sends them).
  auto queued = (*dq::AlertOutbox::open(world.config().sqlite_path))->unsent(10);
  REQUIRE(queued.is_ok());
  CHECK(queued->size() == 5);

  std::string config = write_ctl_config(world);
  std::string output;
  REQUIRE(dqctl(config, {"dead", "purge", "nowhere"}, &output) == 0);
  CHECK(output.find("purged 5") != std::string::npos);
  CHECK(*dq::test::dead_count(world.store(), "nowhere") == 0);
  CHECK(world.store().get("nowhere", "n0").status().code() == dq::Code::kNotFound);

  // Requeue --all sends every dead job back through delivery.
  auto reachable = world.topic("nowhere");
  reachable.updated_at_ms = now_ms();
  REQUIRE(world.registry().update_topic(reachable).is_ok());
  world.add_job("nowhere", "m1", now_ms() + 60000);  // not due: must stay untouched
  world.stop_all();
  world.callback().answer_with({}, 500);
  world.start_timer();
  world.start_consumer();
  for (int i = 0; i < 3; ++i) {
    world.add_job("nowhere", "k" + std::to_string(i), now_ms());
  }
  REQUIRE(world.callback().wait_for(6, 5000));
  deadline = now_ms() + 3000;
  while (now_ms() < deadline && *dq::test::dead_count(world.store(), "nowhere") < 3) {
    sleep_ms(50);
  }
  REQUIRE(*dq::test::dead_count(world.store(), "nowhere") == 3);
  world.callback().answer_with({}, 200);
  size_t before = world.callback().count();
  REQUIRE(dqctl(config, {"--json", "dead", "requeue", "nowhere", "--all"}, &output) == 0);
  CHECK(Json::parse(output)["requeued"] == 3);
  REQUIRE(world.callback().wait_for(before + 3, 5000));
  sleep_ms(300);
  CHECK(*dq::test::dead_count(world.store(), "nowhere") == 0);
  CHECK(world.store().get("nowhere", "k0").status().code() == dq::Code::kNotFound);
  CHECK(world.store().get("nowhere", "m1").is_ok());
}

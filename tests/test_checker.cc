// End-to-end tests of dq-redis-checker: the real build/dqd over real
// redis-servers, a real SMTP server (tests/support/smtp_sink.py) and a real
// webhook receiver (CallbackServer). Shards are killed, stopped (SIGSTOP)
// and brought back; the tests count the mails and webhook calls that arrive.
#include <dirent.h>
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "common/alerts/alert_messages.h"
#include "common/alerts/alert_settings.h"
#include "common/core/clock.h"
#include "common/redis/shard_health.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"
#include "tests/support/smtp_server.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::ReceivedMail;
using dq::test::TestRedis;
using dq::test::TestSmtp;

namespace {

constexpr int kIntervalMs = 200;
constexpr int kDownAfter = 3;
// A deadline to wait on, not a promise: CI runs two suites at once under
// AddressSanitizer, where a check, a mail or a webhook call can lag seconds.
constexpr int kGenerousMs = 30000;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

bool wait_until(const std::function<bool()>& done, int timeout_ms) {
  return dq::test::wait_within(timeout_ms, done);
}

std::vector<ReceivedMail> mails_about(const TestSmtp& smtp, const std::string& part) {
  std::vector<ReceivedMail> found;
  for (auto& mail : smtp.mails()) {
    if (mail.subject.find(part) != std::string::npos) {
      found.push_back(mail);
    }
  }
  return found;
}

std::vector<Json> hooks_of_kind(const CallbackServer& hook, const std::string& kind) {
  std::vector<Json> found;
  for (const auto& request : hook.requests()) {
    Json body = Json::parse(request.body, nullptr, false);
    if (!body.is_discarded() && body.value("kind", std::string()) == kind) {
      found.push_back(body);
    }
  }
  return found;
}

// Two shards, a callback for deliveries, an SMTP server, a webhook receiver
// and a dqd with a fast checker, alert settings stored before it starts.
struct AlertWorld {
  explicit AlertWorld(int timers = 1, int consumers = 1, int group_window_s = 1) {
    DqdOptions options;
    options.shards = {a.address(), b.address()};
    options.timers = timers;
    options.consumers = consumers;
    options.backoff_unit_ms = 100;
    options.extra_ini =
        "[checker]\ninterval_ms = " + std::to_string(kIntervalMs) +
        "\ndown_after = " + std::to_string(kDownAfter) +
        "\nup_after = 2\n[alert]\ngroup_window_s = " + std::to_string(group_window_s) +
        "\nretry_max_s = 1\n";
    dqd = std::make_unique<DqdProcess>(options);
    dq::AlertSettings settings;
    settings.smtp_host = "127.0.0.1";
    settings.smtp_port = smtp.port();
    settings.mail_from = "dq@example.com";
    settings.to = "ops@example.com";
    settings.webhook_url = hook.url("/hook");
    REQUIRE(dq::save_alert_settings(dqd->registry(), dq::Config(), settings).is_ok());
  }

  dq::CheckedShard health(const TestRedis& redis) {
    auto report = dq::read_shard_health(dqd->dir() + "/dqd.pid");
    if (!report.is_ok()) {
      return {};
    }
    const dq::CheckedShard* shard = report->find(redis.address());
    return shard != nullptr ? *shard : dq::CheckedShard{};
  }
  bool checked_down(const TestRedis& redis) {
    dq::CheckedShard shard = health(redis);
    return !shard.name.empty() && !shard.up;
  }
  bool checked_up(const TestRedis& redis) {
    dq::CheckedShard shard = health(redis);
    return !shard.name.empty() && shard.up && shard.failures == 0;
  }

  TestRedis a;
  TestRedis b;
  TestSmtp smtp;
  CallbackServer hook;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
};

}  // namespace

TEST_CASE(
    "a shard killed during a stream of adds: its ids are refused (503) until it returns, no "
    "other add fails, one down and one up alert, every job is delivered") {
  AlertWorld world;
  dq::test::TestRedis& victim = world.b;
  // Every acknowledged write is on disk, so kill -9 loses none of its jobs.
  victim.command({"CONFIG", "SET", "appendfsync", "always"});
  world.dqd->add_topic("orders", world.callback.url());
  world.dqd->start();
  REQUIRE(wait_until([&] { return world.checked_up(world.a) && world.checked_up(world.b); },
                     kGenerousMs));

  std::atomic<bool> stop{false};
  std::atomic<int> failed{0};
  // An add in flight on the shard at the instant it dies has an unknown
  // outcome: the API server answers it 504 "outcome unknown" (it may have been
  // applied, so the server does not silently place it elsewhere). A producer
  // retries it. At most one add is in flight here (one connection).
  std::atomic<int> lost_in_flight{0};
  std::atomic<int> answered{0};  // adds answered so far (the producer's own count)
  std::vector<std::string> added;
  std::vector<std::pair<std::string, std::string>> refused;  // id, job: retried once it is back
  std::string jobs_url = world.dqd->jobs_url("orders");
  std::thread producer([&] {
    HttpClient http;
    for (int n = 0; !stop; ++n) {
      std::string id = "o-" + std::to_string(n);
      // Due in 2 s: many are still on the killed shard while it is down.
      std::string job = Json{{"id", id}, {"body", n}, {"delay", 2}}.dump();
      auto result = http.post(jobs_url, job);
      if (result.status == 504 && result.body.find("outcome unknown") != std::string::npos) {
        ++lost_in_flight;
        result = http.post(jobs_url, job);
      }
      // An add whose home is the dead shard is refused, nothing written
      // (docs/RELIABILITY.md): 503 naming it, with Retry-After.
      if (result.status == 503 && result.body.find(victim.address()) != std::string::npos &&
          result.header("retry-after") == "1") {
        refused.emplace_back(id, job);
      } else if (result.status == 201 || result.status == 200) {
        added.push_back(id);
      } else {
        ++failed;
        MESSAGE("add " << id << " answered " << result.status << " " << result.body
                       << result.error);
      }
      ++answered;
      sleep_ms(5);
    }
  });
  // Some adds before the kill and more while the shard is down: at least
  // that long, and at least that many however slow the machine is (not
  // REQUIREd here, with the producer running: the count is checked below).
  sleep_ms(700);
  wait_until([&] { return answered >= 25; }, kGenerousMs);
  victim.kill9();
  int64_t killed_at = dq::monotonic_ms();
  REQUIRE(wait_until([&] { return world.checked_down(victim); }, kGenerousMs));
  MESSAGE("marked down after " << dq::monotonic_ms() - killed_at << " ms");
  const int answered_at_down = answered;
  sleep_ms(1500);  // adds keep coming while the shard is down
  wait_until([&] { return answered >= std::max(answered_at_down + 25, 60); }, kGenerousMs);
  stop = true;
  producer.join();
  CHECK(failed == 0);
  CHECK(lost_in_flight <= 1);
  MESSAGE(refused.size() << " adds homed on the dead shard were refused (503)");
  CHECK(!refused.empty());
  if (lost_in_flight > 0) {
    MESSAGE("the add in flight at the kill was answered 504 and retried");
  }
  REQUIRE(added.size() > 25);

  REQUIRE(world.smtp.wait_for(1, kGenerousMs));
  REQUIRE(world.hook.wait_for(1, kGenerousMs));
  sleep_ms(2000);  // ten more checks: none may bring another alert
  auto down_mails = mails_about(world.smtp, "is DOWN");
  REQUIRE(down_mails.size() == 1);
  CHECK(down_mails[0].subject.find(victim.address()) != std::string::npos);
  CHECK(down_mails[0].envelope_to == std::vector<std::string>{"ops@example.com"});
  CHECK(down_mails[0].raw.find("Reason: ") != std::string::npos);
  for (const auto& mail : world.smtp.mails()) {
    MESSAGE("mail: " << mail.subject);
  }
  CHECK(world.smtp.mails().size() == 1);
  auto down_hooks = hooks_of_kind(world.hook, "shard_down");
  REQUIRE(down_hooks.size() == 1);
  CHECK(down_hooks[0]["shard"] == victim.address());
  CHECK(world.hook.count() == 1);

  // /healthz and /metrics show the checker's view, with the reason.
  auto health = dq::test::http_request("GET", world.dqd->base_url() + "/healthz");
  CHECK(health.status == 200);
  bool seen = false;
  Json body = health.json();
  for (const auto& shard : body["shards"]) {
    if (shard["name"] != victim.address()) {
      continue;
    }
    seen = true;
    CHECK(shard["checker"]["up"] == false);
    CHECK(shard["checker"]["reason"].get<std::string>().size() > 0);
    CHECK(shard["checker"]["since_ms"].get<int64_t>() > 0);
  }
  CHECK(seen);
  auto metrics = dq::test::http_request("GET", world.dqd->base_url() + "/metrics");
  CHECK(metrics.body.find("dq_redis_shard_checked_up{shard=\"" + victim.address() + "\"} 0") !=
        std::string::npos);
  CHECK(metrics.body.find("dq_redis_shard_checked_up{shard=\"" + world.a.address() + "\"} 1") !=
        std::string::npos);

  victim.start();
  REQUIRE(wait_until([&] { return world.checked_up(victim); }, kGenerousMs));
  REQUIRE(world.smtp.wait_for(2, kGenerousMs));
  REQUIRE(world.hook.wait_for(2, kGenerousMs));
  sleep_ms(1000);
  auto up_mails = mails_about(world.smtp, "back UP");
  REQUIRE(up_mails.size() == 1);
  CHECK(up_mails[0].raw.find("It was down for") != std::string::npos);
  CHECK(world.smtp.mails().size() == 2);
  auto up_hooks = hooks_of_kind(world.hook, "shard_up");
  REQUIRE(up_hooks.size() == 1);
  CHECK(up_hooks[0]["down_for_ms"].get<int64_t>() > 0);
  CHECK(world.hook.count() == 2);

  // The refused adds, retried now, are placed on their home.
  HttpClient retry;
  for (const auto& [id, job] : refused) {
    long status = 0;
    CHECK(wait_until(
        [&] {
          status = retry.post(jobs_url, job).status;
          return status == 201 || status == 200;
        },
        kGenerousMs));
    added.push_back(id);
  }
  // Every job added, including those on the killed shard, arrives.
  std::set<std::string> expected(added.begin(), added.end());
  auto delivered = [&] {
    std::set<std::string> ids;
    for (const auto& request : world.callback.requests()) {
      ids.insert(request.header("x-dq-id"));
    }
    return ids;
  };
  bool all = wait_until(
      [&] {
        auto ids = delivered();
        return std::includes(ids.begin(), ids.end(), expected.begin(), expected.end());
      },
      2 * kGenerousMs);
  if (!all) {
    auto ids = delivered();
    size_t missing = 0;
    for (const auto& id : expected) {
      missing += ids.count(id) == 0;
    }
    FAIL(missing << " of " << expected.size() << " jobs were never delivered");
  }
  CHECK(world.dqd->stop() == 0);
}

TEST_CASE(
    "a shard that accepts connections but never answers (SIGSTOP) is down within "
    "down_after checks and alerts once") {
  AlertWorld world(0, 0);
  world.dqd->start();
  REQUIRE(wait_until([&] { return world.checked_up(world.b); }, kGenerousMs));
  REQUIRE(kill(world.b.pid(), SIGSTOP) == 0);
  int64_t stopped_at = dq::monotonic_ms();
  bool down = wait_until([&] { return world.checked_down(world.b); }, kGenerousMs);
  int64_t took = dq::monotonic_ms() - stopped_at;
  REQUIRE(down);
  MESSAGE("SIGSTOPped shard marked down after " << took << " ms");
  // down_after checks, each bounded by one interval, plus one interval of
  // phase and a little slack for a loaded machine.
  CHECK(took <= (kDownAfter + 1) * kIntervalMs + 1000);
  CHECK(world.health(world.b).reason.find("no answer to PING") != std::string::npos);
  CHECK(world.checked_up(world.a));
  // It stays hung (resumed even for a moment, two answered checks would bring
  // it back up and a second down alert). dqctl shows the checker's report,
  // written after each check: read it until it says why.
  dq::test::RunResult status;
  wait_until(
      [&] {
        status = dq::test::run_dqctl({"-c", world.dqd->config_path(), "status"}, world.dqd->dir());
        return status.exit_code == 0 && status.out.find("DOWN") != std::string::npos &&
               status.out.find("no answer to PING") != std::string::npos;
      },
      kGenerousMs);
  CHECK(status.exit_code == 0);
  CHECK(status.out.find(world.b.address()) != std::string::npos);
  CHECK(status.out.find("DOWN") != std::string::npos);
  CHECK(status.out.find("no answer to PING") != std::string::npos);
  auto json =
      dq::test::run_dqctl({"-c", world.dqd->config_path(), "--json", "status"}, world.dqd->dir());
  REQUIRE(json.exit_code == 0);
  Json parsed = Json::parse(json.out);
  REQUIRE(parsed["shards"]["shards"].size() == 2);
  REQUIRE(world.smtp.wait_for(1, kGenerousMs));
  REQUIRE(
      wait_until([&] { return !hooks_of_kind(world.hook, "shard_down").empty(); }, kGenerousMs));
  sleep_ms(2000);
  kill(world.b.pid(), SIGCONT);
  CHECK(mails_about(world.smtp, "is DOWN").size() == 1);
  CHECK(world.smtp.mails().size() == 1);
  CHECK(hooks_of_kind(world.hook, "shard_down").size() == 1);
  CHECK(world.dqd->stop() == 0);
}

TEST_CASE(
    "50 dead letters of one topic within the group window: one mail to the topic's "
    "recipients listing them") {
  AlertWorld world(1, 1, 3);
  world.callback.answer_with({}, 500);
  dq::Topic topic;
  topic.name = "doomed";
  topic.callback_url = world.callback.url();
  topic.max_attempts = 1;
  topic.alert_emails = "team@example.com,lead@example.com";
  topic.circuit_breaker = false;  // every call fails on purpose: the jobs must die, not wait
  REQUIRE(world.dqd->registry().add_topic(topic).is_ok());
  world.dqd->start();
  HttpClient http;
  Json batch = Json::array();
  for (int n = 0; n < 50; ++n) {
    batch.push_back({{"id", "d-" + std::to_string(n)}, {"body", n}});
  }
  auto added = http.post(world.dqd->jobs_url("doomed") + "/batch", Json{{"jobs", batch}}.dump());
  REQUIRE(added.status == 200);
  REQUIRE(world.callback.wait_for(50, kGenerousMs));

  REQUIRE(world.smtp.wait_for(1, kGenerousMs));
  REQUIRE(
      wait_until([&] { return !hooks_of_kind(world.hook, "dead_letters").empty(); }, kGenerousMs));
  sleep_ms(4000);  // more than the window: no second mail
  auto mails = world.smtp.mails();
  REQUIRE(mails.size() == 1);
  CHECK(mails[0].subject == "[dq] 50 jobs of topic doomed dead-lettered");
  std::set<std::string> to(mails[0].envelope_to.begin(), mails[0].envelope_to.end());
  CHECK(to == std::set<std::string>{"ops@example.com", "team@example.com", "lead@example.com"});
  for (int n = 0; n < 50; ++n) {
    CAPTURE(n);
    CHECK(mails[0].raw.find("  d-" + std::to_string(n) + "  (1 attempts)  last error: ") !=
          std::string::npos);
  }
  CHECK(mails[0].raw.find("HTTP 500") != std::string::npos);
  auto hooks = hooks_of_kind(world.hook, "dead_letters");
  REQUIRE(hooks.size() == 1);
  CHECK(hooks[0]["count"] == 50);
  CHECK(hooks[0]["jobs"].size() == 50);
  CHECK(world.dqd->stop() == 0);
}

TEST_CASE("the SMTP server is down while alerts are due: they are sent once it is back") {
  AlertWorld world(0, 0);
  world.dqd->start();
  REQUIRE(wait_until([&] { return world.checked_up(world.b); }, kGenerousMs));
  world.smtp.stop();
  world.b.kill9();
  REQUIRE(world.hook.wait_for(1, kGenerousMs));  // the webhook took it; the mail is waiting
  auto messages = dq::AlertMessages::open(world.dqd->sqlite_path());
  REQUIRE(messages.is_ok());
  bool retried = wait_until(
      [&] {
        auto recent = (*messages)->recent(5);
        return recent.is_ok() && !recent->empty() && (*recent)[0].attempts >= 2 &&
               (*recent)[0].mail_state == "pending" && (*recent)[0].webhook_state == "sent";
      },
      kGenerousMs);
  REQUIRE(retried);
  CHECK((*(*messages)->recent(1))[0].last_error.find("SMTP") != std::string::npos);
  world.smtp.start();
  REQUIRE(world.smtp.wait_for(1, kGenerousMs));
  sleep_ms(2500);
  CHECK(mails_about(world.smtp, "is DOWN").size() == 1);
  CHECK(world.smtp.mails().size() == 1);
  CHECK(world.hook.count() == 1);  // the webhook is not called again for the mail's retries
  auto sent = (*(*messages)->recent(1))[0];
  CHECK(sent.mail_state == "sent");
  CHECK(sent.sent_at_ms.has_value());
  CHECK(world.dqd->stop() == 0);
}

TEST_CASE("a child in a crash loop is alerted once") {
  AlertWorld world(1, 0);
  world.dqd->start();
  auto timer_pid = [&]() -> pid_t {
    std::ifstream in(world.dqd->dir() + "/dqd.pid.status.json");
    std::stringstream text;
    text << in.rdbuf();
    Json parsed = Json::parse(text.str(), nullptr, false);
    if (parsed.is_discarded()) {
      return -1;
    }
    for (const auto& child : parsed["children"]) {
      if (child["title"] == "dq-timer_0" && child["state"] == "running") {
        return child["pid"];
      }
    }
    return -1;
  };
  pid_t last = -1;
  for (int death = 0; death < 4; ++death) {
    pid_t pid = -1;
    REQUIRE(wait_until([&] { return (pid = timer_pid()) > 0 && pid != last; }, kGenerousMs));
    REQUIRE(kill(pid, SIGKILL) == 0);
    last = pid;
  }
  REQUIRE(world.smtp.wait_for(1, kGenerousMs));
  REQUIRE(
      wait_until([&] { return !hooks_of_kind(world.hook, "crash_loop").empty(); }, kGenerousMs));
  sleep_ms(1500);
  auto mails = world.smtp.mails();
  REQUIRE(mails.size() == 1);
  CHECK(mails[0].subject == "[dq] dq-timer_0 is in a crash loop");
  CHECK(mails[0].raw.find("killed by signal 9") != std::string::npos);
  CHECK(hooks_of_kind(world.hook, "crash_loop").size() == 1);
  CHECK(world.dqd->stop() == 0);
}

TEST_CASE(
    "a shard restarted without its data: one data-lost alert (mail and webhook) with the jobs dq "
    "had counted on it, the metrics say so, and a new identity is written") {
  AlertWorld world(/*timers=*/0, /*consumers=*/0);
  dq::test::TestRedis& victim = world.b;
  world.dqd->add_topic("orders", world.callback.url());
  world.dqd->start();
  REQUIRE(wait_until([&] { return !world.health(victim).identity.empty(); }, kGenerousMs));
  std::string identity = world.health(victim).identity;
  CHECK(victim.command({"GET", "{dq}:identity"})->str == identity);

  // Due in an hour: every accepted job is still on its shard when it dies.
  HttpClient http;
  std::vector<std::string> accepted;
  for (int n = 0; n < 300; ++n) {
    std::string id = "o-" + std::to_string(n);
    auto added = http.post(world.dqd->jobs_url("orders"),
                           Json{{"id", id}, {"body", n}, {"delay", 3600}}.dump());
    if (added.status == 201) {
      accepted.push_back(id);
    }
  }
  REQUIRE(accepted.size() == 300);
  int64_t on_victim = 0;
  REQUIRE(wait_until(
      [&] {
        auto counts = victim.command({"HVALS", "{dq}:counts"});
        on_victim = 0;
        for (size_t i = 0; i < counts->elements; ++i) {
          on_victim += std::stoll(counts->element[i]->str);
        }
        return on_victim > 0 && world.health(victim).counted_jobs == on_victim;
      },
      kGenerousMs));

  // kill -9, and back with an empty data dir (no AOF): its jobs are gone.
  victim.kill9();
  for (const auto& entry : std::filesystem::directory_iterator(victim.dir())) {
    std::filesystem::remove_all(entry.path());
  }
  victim.start();
  REQUIRE(world.smtp.wait_for(1, kGenerousMs));
  REQUIRE(wait_until([&] { return !mails_about(world.smtp, "LOST").empty(); }, kGenerousMs));
  REQUIRE(wait_until([&] { return !hooks_of_kind(world.hook, "shard_data_lost").empty(); },
                     kGenerousMs));
  sleep_ms(2000);  // ten more checks: none may report it again
  auto lost_mails = mails_about(world.smtp, "LOST");
  REQUIRE(lost_mails.size() == 1);
  CHECK(lost_mails[0].subject.find(victim.address()) != std::string::npos);
  CHECK(lost_mails[0].subject.find("(" + std::to_string(on_victim) + " jobs)") !=
        std::string::npos);
  auto lost_hooks = hooks_of_kind(world.hook, "shard_data_lost");
  REQUIRE(lost_hooks.size() == 1);
  CHECK(lost_hooks[0]["shard"] == victim.address());
  CHECK(lost_hooks[0]["lost_jobs"] == on_victim);
  CHECK(lost_hooks[0]["identity_before"] == identity);

  // Count what the clients were promised against what is there.
  REQUIRE(wait_until([&] { return world.checked_up(victim); }, kGenerousMs));
  size_t found = 0;
  size_t missing = 0;
  for (const auto& id : accepted) {
    auto got = http.get(world.dqd->jobs_url("orders") + "/" + id);
    found += got.status == 200;
    missing += got.status == 404;
  }
  MESSAGE("accepted " << accepted.size() << ", on the restarted shard " << on_victim
                      << ", still found " << found << ", lost " << missing);
  CHECK(missing == static_cast<size_t>(on_victim));
  CHECK(found + missing == accepted.size());

  auto metrics = dq::test::http_request("GET", world.dqd->base_url() + "/metrics").body;
  CHECK(metrics.find("dq_shard_data_lost_total{shard=\"" + victim.address() + "\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("dq_shard_lost_jobs{shard=\"" + victim.address() + "\"} " +
                     std::to_string(on_victim)) != std::string::npos);
  CHECK(metrics.find("dq_shard_data_lost_total{shard=\"" + world.a.address() + "\"} 0") !=
        std::string::npos);
  // A new identity is on the shard and remembered, so it is reported once.
  std::string renewed = world.health(victim).identity;
  CHECK(!renewed.empty());
  CHECK(renewed != identity);
  CHECK(victim.command({"GET", "{dq}:identity"})->str == renewed);
}

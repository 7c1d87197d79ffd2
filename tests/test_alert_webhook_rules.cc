// The alert webhook under the callback URL rules, against a real dqd (admin
// page and redis checker) and dqctl: a webhook_url that reaches a metadata
// address, a Redis shard or one of dq's own listeners, in any spelling, is
// refused wherever it is set; one stored anyway (another host, an older dq)
// or whose name resolves inside is not called when an alert goes out; and
// the test button reports the webhook's status and time, never what it
// answered (a fake metadata service answers an AccessKeyId here).
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/alerts/alert_messages.h"
#include "common/alerts/alert_outbox.h"
#include "common/alerts/alert_settings.h"
#include "common/core/json.h"
#include "tests/support/admin_client.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::AdminClient;
using dq::test::CallbackAnswer;
using dq::test::CallbackServer;
using dq::test::contains;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::TestRedis;
using dq::test::text_of_dir;

namespace {

constexpr const char* kPassword = "correct horse battery";
constexpr const char* kSecretKey = "ASIAFAKEMETADATAKEY7";

// A cloud metadata service as an attacker hopes to read it.
CallbackAnswer metadata_answer() {
  return CallbackAnswer(200, 0,
                        std::string(R"({"Code":"Success","Type":"AWS-HMAC","AccessKeyId":")") +
                            kSecretKey + R"(","SecretAccessKey":"wJalrXUtnFEMI/K7MDENG"})");
}

struct WebhookWorld {
  WebhookWorld() {
    metadata.set_responder(
        [](const dq::test::RecordedRequest&, size_t) { return metadata_answer(); });
    DqdOptions options;
    options.shards = {redis.address()};
    options.admin = true;
    options.extra_ini =
        "[admin]\nuser = admin\npassword_file = admin-password\n"
        "[alert]\ngroup_window_s = 0\nretry_max_s = 1\nsend_timeout_ms = 2000\n";
    dqd = std::make_unique<DqdProcess>(options);
    std::ofstream(dqd->dir() + "/admin-password") << kPassword << "\n";
    dqd->start();
    REQUIRE(dq::test::wait_until(10000, [&] {
      return dq::test::http_request("GET", dqd->admin_url() + "/login").status == 200;
    }));
    admin = AdminClient(dqd->admin_url());
    REQUIRE(admin.login("admin", kPassword).status == 200);
  }

  std::string stored_webhook() {
    auto settings = dq::load_alert_settings(dqd->registry());
    REQUIRE(settings.is_ok());
    return settings->webhook_url;
  }

  dq::test::RunResult dqctl(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"-c", dqd->config_path()};
    all.insert(all.end(), args.begin(), args.end());
    return dq::test::run_dqctl(all, dqd->dir());
  }

  // Every internal target a webhook must not reach, in the spellings a
  // resolver or libcurl takes for it.
  std::vector<std::string> internal_urls() const {
    std::string r = std::to_string(redis.port());
    std::string api = std::to_string(dqd->http_port());
    std::string page = std::to_string(dqd->admin_port());
    std::string legacy = std::to_string(dqd->legacy_port());
    return {
        // the metadata service
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://169.254.169.254:80/",
        "HTTP://169.254.169.254./",
        "http://2852039166/",
        "http://0xa9fea9fe/",
        "http://0xa9.0xfe.0xa9.0xfe/",
        "http://0251.0376.0251.0376/",
        "http://169.254.43518/",
        "http://169.16689662/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[0:0:0:0:0:ffff:169.254.169.254]/",
        "http://[fe80::1]/",
        "http://[fe80::a9fe:a9fe%25eth0]/",
        "http://user:pass@169.254.169.254/",
        // the Redis shard
        "http://127.0.0.1:" + r + "/",
        "http://localhost:" + r + "/",
        "http://LOCALHOST.:" + r + "/",
        "http://foo.localhost:" + r + "/",
        "http://[::1]:" + r + "/",
        "http://127.1:" + r + "/",
        "http://2130706433:" + r + "/",
        "http://0x7f000001:" + r + "/",
        "http://0177.0.0.1:" + r + "/",
        "http://[::ffff:127.0.0.1]:" + r + "/",
        "http://[::ffff:7f00:1]:" + r + "/",
        "http://0.0.0.0:" + r + "/",
        "http://0:" + r + "/",
        "http://127.0.0.2:" + r + "/",
        // dq's own listeners
        "http://127.0.0.1:" + api + "/v1/topics/x/jobs",
        "http://localhost:" + page + "/api/alerts",
        "http://[::]:" + legacy + "/",
    };
  }

  TestRedis redis;
  CallbackServer metadata;
  std::unique_ptr<DqdProcess> dqd;
  AdminClient admin{""};
};

}  // namespace

TEST_CASE(
    "a webhook_url that reaches inside is refused by dqctl and the admin page, however spelt") {
  WebhookWorld world;
  std::vector<std::string> urls = world.internal_urls();
  CHECK(urls.size() >= 27);
  for (const std::string& url : urls) {
    CAPTURE(url);
    auto set = world.dqctl({"alert", "set", "--webhook", url});
    CHECK(set.exit_code == 1);
    CHECK(contains(set.err, "webhook_url: "));
    CHECK_FALSE(contains(set.out, "saved"));
    auto put = world.admin.call("PUT", "/api/alerts", Json{{"webhook_url", url}}.dump());
    CHECK(put.status == 400);
    CHECK(contains(put.json().value("error", ""), "webhook_url: "));
    CHECK(world.stored_webhook().empty());  // nothing was written
  }
  // Why, in words: the metadata address, the shard, the listener.
  auto metadata = world.dqctl({"alert", "set", "--webhook", urls[0]});
  CHECK(contains(metadata.err, "link-local"));
  auto shard = world.dqctl({"alert", "set", "--webhook", urls[15]});
  CHECK(contains(shard.err, "Redis shard"));
  auto own = world.dqctl({"alert", "set", "--webhook", urls[29]});
  CHECK(contains(own.err, "API listen address"));

  // A receiver on this machine at a port that is none of those is fine.
  std::string fine = world.metadata.url("/hook");
  auto set = world.dqctl({"alert", "set", "--webhook", fine});
  CHECK_MESSAGE(set.exit_code == 0, set.err);
  CHECK(world.stored_webhook() == fine);
  CHECK(world.admin.call("PUT", "/api/alerts", Json{{"webhook_url", fine}}.dump()).status == 200);
}

TEST_CASE("the webhook test reports status and time only, never what the target answered") {
  WebhookWorld world;
  // Allowed by the rules (a local port that is no shard or listener), and
  // answering like a metadata service.
  std::string hook = world.metadata.url("/latest/meta-data/iam/security-credentials/role");
  REQUIRE(world.admin.call("PUT", "/api/alerts", Json{{"webhook_url", hook}}.dump()).status == 200);

  auto page = world.admin.call("POST", "/api/alerts/test");
  CAPTURE(page.body);
  CHECK(page.status == 200);
  Json webhook = page.json()["webhook"];
  CHECK(webhook["ok"] == true);
  CHECK(webhook["status"] == 200);
  CHECK(webhook["took_ms"].is_number_integer());
  CHECK(contains(webhook.value("answer", ""), "HTTP 200 in "));
  CHECK_FALSE(contains(page.body, kSecretKey));
  CHECK_FALSE(contains(page.body, "AccessKeyId"));

  auto ctl = world.dqctl({"alert", "test"});
  CHECK(ctl.exit_code == 0);
  CHECK(contains(ctl.out, "webhook: accepted: HTTP 200 in "));
  CHECK_FALSE(contains(ctl.out + ctl.err, kSecretKey));
  auto json = world.dqctl({"--json", "alert", "test"});
  CHECK_FALSE(contains(json.out + json.err, kSecretKey));
  size_t tests = 0;  // it was called each time
  for (const auto& request : world.metadata.requests()) {
    tests += Json::parse(request.body, nullptr, false).value("kind", "") == "test" ? 1 : 0;
  }
  CHECK(tests == 3);

  // A failing target: its answer is not shown either.
  world.metadata.set_responder([](const dq::test::RecordedRequest&, size_t) {
    CallbackAnswer answer = metadata_answer();
    answer.status = 500;
    return answer;
  });
  auto failed = world.admin.call("POST", "/api/alerts/test");
  CHECK(failed.json()["webhook"]["ok"] == false);
  CHECK(contains(failed.json()["webhook"].value("error", ""), "HTTP 500 in "));
  CHECK_FALSE(contains(failed.body, kSecretKey));

  // Nor is it in any log, or in the alert tables.
  REQUIRE(world.dqd->stop() == 0);
  CHECK_FALSE(contains(text_of_dir(world.dqd->log_dir()), kSecretKey));
  for (const char* suffix : {"", "-wal"}) {
    CHECK_FALSE(contains(dq::test::read_text_file(world.dqd->sqlite_path() + suffix), kSecretKey));
  }
}

TEST_CASE("a webhook stored past the rules, or whose name resolves inside, is not called") {
  WebhookWorld world;
  // Written straight into the registry, as another host of an older dq
  // (or a shared registry) would, past every set-time check. The machine's
  // own name resolves to one of its addresses: the rules apply after DNS.
  char host[256] = {0};
  REQUIRE(gethostname(host, sizeof host - 1) == 0);
  std::string r = std::to_string(world.redis.port());
  const std::vector<std::string> stored = {"http://" + std::string(host) + ":" + r + "/",
                                           "http://169.254.169.254/latest/meta-data/",
                                           "http://localhost:" + r + "/"};
  for (const std::string& url : stored) {
    CAPTURE(url);
    REQUIRE(world.dqd->registry().set_alert_setting("webhook_url", url).is_ok());
    // The test send (dqctl, the page) refuses it...
    auto ctl = world.dqctl({"alert", "test"});
    CHECK(ctl.exit_code == 1);
    CHECK(contains(ctl.out, "webhook: FAILED: "));
    CHECK((contains(ctl.out, "refused") || contains(ctl.out, "link-local") ||
           contains(ctl.out, "Redis shard")));
    // ...and so does the redis checker when a real alert goes out.
    auto outbox = dq::AlertOutbox::open(world.dqd->sqlite_path());
    REQUIRE(outbox.is_ok());
    REQUIRE(
        (*outbox)->queue(dq::crash_loop_alert("dq-timer_0", "exited with status 1", 1000)).is_ok());
    auto messages = dq::AlertMessages::open(world.dqd->sqlite_path());
    REQUIRE(messages.is_ok());
    std::string error;
    CHECK(dq::test::wait_until(15000, [&] {
      auto recent = (*messages)->recent(1);
      if (!recent.is_ok() || recent->empty() || recent->at(0).attempts == 0) {
        return false;
      }
      error = recent->at(0).last_error;
      return recent->at(0).webhook_state == "pending";
    }));
    CAPTURE(error);
    CHECK(contains(error, "webhook"));
    CHECK((contains(error, "refused") || contains(error, "link-local") ||
           contains(error, "Redis shard")));
  }
  // Redis never saw an HTTP request (it logs a "SECURITY ATTACK" for one).
  dq::test::sleep_ms(300);
  std::string redis_log = dq::test::read_text_file(world.redis.dir() + "/redis.log");
  CHECK(contains(redis_log, "Ready to accept connections"));
  CHECK_FALSE(contains(redis_log, "SECURITY ATTACK"));
  CHECK(contains(text_of_dir(world.dqd->log_dir()), "refused to connect"));
}

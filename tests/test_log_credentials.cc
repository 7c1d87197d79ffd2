// No credential in any log line, against a real dqd that used each kind of
// them: a shard password, API tokens in the Authorization header and in the
// URL (?token=, access_token, api_key), cookies, the admin password and its
// session and CSRF token, a callback URL with user:password@ and a token in
// its query, a topic signing secret, the SMTP password, an alert webhook
// whose path is its secret, and shard entries with passwords in a config
// dqd refuses (redis://:pw@, sentinel://master:pw@, host:port:pw). Every
// log file of the run (and dqd's own error output) is searched for each.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/alerts/alert_outbox.h"
#include "common/alerts/alert_settings.h"
#include "common/core/json.h"
#include "server/legacy_frame.h"
#include "tests/support/admin_client.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::AdminClient;
using dq::test::CallbackServer;
using dq::test::contains;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::TestRedis;

namespace {

const std::string kShardPassword = "shardpw-QX1a";
const std::string kAdminPassword = "adminpw-QX2b";
const std::string kCallbackPassword = "cbpw-QX3c";
const std::string kCallbackToken = "cbtoken-QX4d";
const std::string kCookie = "cookie-QX5e";
const std::string kSmtpPassword = "smtppw-QX6f";
const std::string kWebhookSecret = "hooksecret-QX7g";
const std::string kRedisUrlPassword = "redispw-QX8h";
const std::string kSentinelPassword = "sentinelpw-QX9i";
const std::string kPlainShardPassword = "plainpw-QX0j";
const std::string kLegacyToken = "dqt_legacywrong-QXk";

std::string all_files_in(const std::string& dir) {
  std::string all;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      all += dq::test::read_text_file(entry.path().string());
    }
  }
  return all;
}

}  // namespace

TEST_CASE("no credential of any kind reaches a log line") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "requirepass", kShardPassword});
  CallbackServer receiver;
  CallbackServer hook;
  hook.answer_with({}, 500);  // the alert webhook fails: its error is logged
  DqdOptions options;
  options.shards = {redis.address() + ":" + kShardPassword};
  options.timers = 1;
  options.consumers = 1;
  options.admin = true;
  options.extra_ini =
      "[server]\nrequire_token = yes\n"
      "[admin]\nuser = admin\npassword_file = admin-password\n"
      "[alert]\ngroup_window_s = 0\nretry_max_s = 1\nsend_timeout_ms = 2000\n";
  DqdProcess dqd(options);
  std::ofstream(dqd.dir() + "/admin-password") << kAdminPassword << "\n";
  dqd.start();
  auto dqctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-c", dqd.config_path()});
    return dq::test::run_dqctl(args, dqd.dir());
  };

  // An API token, a signed topic whose callback URL carries credentials.
  auto token_made = dqctl({"token", "add", "producer", "--topics", "*"});
  REQUIRE_MESSAGE(token_made.exit_code == 0, token_made.err);
  std::string token = token_made.out.substr(0, token_made.out.find('\n'));
  REQUIRE(token.rfind("dqt_", 0) == 0);
  std::string callback = "http://user:" + kCallbackPassword +
                         "@127.0.0.1:" + std::to_string(receiver.port()) +
                         "/cb?token=" + kCallbackToken;
  auto topic_made =
      dqctl({"topic", "add", "creds", "--callback", callback, "--signing-secret", "generate"});
  REQUIRE_MESSAGE(topic_made.exit_code == 0, topic_made.err);
  size_t at = topic_made.out.find("whsec_");
  REQUIRE(at != std::string::npos);
  std::string signing_secret =
      topic_made.out.substr(at, topic_made.out.find_first_of(" \n", at) - at);
  std::string signing_key = signing_secret.substr(6);  // its base64 part

  // HTTP: the token in the header (accepted), in the URL (refused), a cookie.
  HttpClient authorized;
  authorized.add_header("Authorization: Bearer " + token);
  authorized.add_header("Cookie: session=" + kCookie);
  receiver.answer_with({500}, 200);  // one failed attempt, then delivered
  // The topic is known to the API server at its next registry read.
  REQUIRE(dq::test::wait_until(5000, [&] {
    return authorized.post(dqd.jobs_url("creds"), dq::test::job_doc("c1", 1, 0)).status == 201;
  }));
  HttpClient anonymous;
  anonymous.add_header("Cookie: session=" + kCookie);
  CHECK(anonymous.post(dqd.jobs_url("creds") + "?token=" + token, dq::test::job_doc("c2", 1, 0))
            .status == 401);
  CHECK(anonymous.get(dqd.jobs_url("creds") + "/c1?x=1&access_token=" + token + "&api_key=" + token)
            .status == 401);
  CHECK(anonymous.get(dqd.base_url() + "/v1/nothing?password=" + token).status == 401);
  // The legacy port with a wrong token.
  dq::test::LegacySocket legacy(dqd.legacy_port());
  Json refused = legacy.call(
      Json{{"cmd", "add"}, {"topic", "creds"}, {"id", "l1"}, {"body", 1}, {"token", kLegacyToken}});
  CHECK(refused["code"] == 0);

  // The admin page: a login, its session and CSRF token, the alert settings
  // with an SMTP password and a webhook whose path is its secret.
  AdminClient admin(dqd.admin_url());
  CHECK(AdminClient(dqd.admin_url()).login("admin", "wrong-" + kAdminPassword).status == 401);
  auto login = admin.login("admin", kAdminPassword);
  REQUIRE(login.status == 200);
  std::string csrf = login.json().value("csrf", "");
  REQUIRE_FALSE(csrf.empty());
  std::string session = admin.cookie();
  std::string webhook = hook.url("/hooks/" + kWebhookSecret);
  auto saved = admin.call("PUT", "/api/alerts",
                          Json{{"smtp_host", "127.0.0.1"},
                               {"smtp_port", std::to_string(dq::test::free_port())},
                               {"smtp_user", "dq"},
                               {"smtp_password", kSmtpPassword},
                               {"to", "ops@example.com"},
                               {"webhook_url", webhook}}
                              .dump());
  REQUIRE_MESSAGE(saved.status == 200, saved.body);
  CHECK(admin.call("POST", "/api/alerts/test").status == 200);
  // A real alert through the checker: mail and webhook both fail, and are logged.
  auto outbox = dq::AlertOutbox::open(dqd.sqlite_path());
  REQUIRE(outbox.is_ok());
  REQUIRE((*outbox)->queue(dq::crash_loop_alert("dq-timer_0", "exited", 1000)).is_ok());

  // The job delivered (after one failed, logged attempt), signed.
  REQUIRE(receiver.wait_for(2, 15000));
  CHECK(receiver.requests()[1].header("webhook-signature").rfind("v1,", 0) == 0);
  CHECK(dq::test::wait_until(
      10000, [&] { return contains(all_files_in(dqd.log_dir()), "not sent (attempt"); }));
  REQUIRE(dqd.stop() == 0);

  // A config dqd refuses, with passwords in its shard entries: its output
  // and logs name the entries without them.
  std::vector<std::string> refused_entries = {
      "redis://:" + kRedisUrlPassword + "@127.0.0.1:1",
      "sentinel://:" + kSentinelPassword + "@127.0.0.1:26379",
      "127.0.0.1:notaport:" + kPlainShardPassword};
  std::string refused_output;
  for (const std::string& entry : refused_entries) {
    CAPTURE(entry);
    std::string dir = dqd.dir() + "/refused";
    std::filesystem::create_directories(dir + "/log");
    std::ofstream(dir + "/dq.ini") << "[redis]\nshards = " << entry << "\n[log]\ndir = " << dir
                                   << "/log\n[sqlite]\npath = " << dir << "/dq.db\n";
    auto checked = dq::test::run_program(
        {std::string(DQ_BUILD_DIR) + "/dqd", "--test-config", "-c", dir + "/dq.ini"}, dir);
    CHECK(checked.exit_code != 0);
    CHECK(contains(checked.out + checked.err, "shard"));
    refused_output += checked.out + checked.err;
  }

  std::string logs = all_files_in(dqd.log_dir()) + all_files_in(dqd.dir() + "/refused/log");
  CHECK(contains(logs, "-> 401"));  // the refusals were logged...
  CHECK(contains(logs, "token=***"));
  CHECK(contains(logs, "/hooks/") == false);
  CHECK(contains(logs, "http://127.0.0.1:" + std::to_string(hook.port()) + "/..."));
  const std::vector<std::pair<std::string, std::string>> secrets = {
      {"shard password", kShardPassword},
      {"API token", token},
      {"API token secret part", token.substr(4)},
      {"legacy token", kLegacyToken},
      {"cookie", kCookie},
      {"admin password", kAdminPassword},
      {"admin session", session.substr(session.find('=') + 1)},
      {"CSRF token", csrf},
      {"callback password", kCallbackPassword},
      {"callback token", kCallbackToken},
      {"signing secret", signing_key},
      {"SMTP password", kSmtpPassword},
      {"webhook path", kWebhookSecret},
      {"redis:// password", kRedisUrlPassword},
      {"sentinel:// password", kSentinelPassword},
      {"host:port:password", kPlainShardPassword},
  };
  for (const auto& [what, secret] : secrets) {
    CAPTURE(what);
    REQUIRE(secret.size() >= 8);
    CHECK_FALSE(contains(logs, secret));
    CHECK_FALSE(contains(refused_output, secret));
  }
}

// Alert plumbing without dqd: SMTP sending against a real SMTP server, the
// webhook against a real HTTP receiver, `dqctl alert show|set|test`, the
// alert tables (an event goes into exactly one message; a message is sent by
// one checker at a time), the shard up/down state machine and the shard
// health file with its cached view.
#include <doctest/doctest.h>

#include <fstream>

#include "checker/shard_tracker.h"
#include "common/alerts/alert_messages.h"
#include "common/alerts/alert_outbox.h"
#include "common/alerts/alert_settings.h"
#include "common/alerts/smtp_mail.h"
#include "common/alerts/webhook.h"
#include "common/core/clock.h"
#include "common/redis/shard_health.h"
#include "common/registry/registry.h"
#include "tests/support/callback_server.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"
#include "tests/support/smtp_server.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::TestSmtp;

namespace {

struct TempDir {
  TempDir() : path(dq::test::make_temp_dir("dq-alerts")) {}
  ~TempDir() { dq::test::remove_dir(path); }
  std::string path;
};

dq::AlertSettings smtp_settings(const TestSmtp& smtp) {
  dq::AlertSettings settings;
  settings.smtp_host = "127.0.0.1";
  settings.smtp_port = smtp.port();
  settings.mail_from = "dq@example.com";
  settings.to = "ops@example.com";
  return settings;
}

std::string write_config(const TempDir& dir) {
  std::string path = dir.path + "/dq.ini";
  std::ofstream out(path);
  // No Redis: the registry is this host's alone (dqctl alert set writes SQLite).
  out << "[redis]\nshards = 127.0.0.1:1\nstart_local = no\n[sqlite]\npath = dq.db\n[registry]\n"
         "shared = no\n[log]\ndir = log\n[alert]\nsend_timeout_ms = 3000\n";
  return path;
}

}  // namespace

TEST_CASE("send_mail: the SMTP server gets envelope, headers and body, and its answer comes back") {
  TestSmtp smtp;
  dq::AlertSettings settings = smtp_settings(smtp);
  dq::OutgoingMail mail{{"ops@example.com", "dev@example.com"},
                        "Shard down: größer",
                        "line one\n.line with a leading dot\nline three"};
  auto sent = dq::send_mail(settings, mail, 5000);
  REQUIRE_MESSAGE(sent.is_ok(), sent.status().message());
  CHECK(sent->find("250 OK queued as 1") != std::string::npos);
  REQUIRE(smtp.wait_for(1, 5000));
  auto received = smtp.mails()[0];
  CHECK(received.envelope_from == "dq@example.com");
  CHECK(received.envelope_to == std::vector<std::string>{"ops@example.com", "dev@example.com"});
  CHECK(received.subject.rfind("=?UTF-8?B?", 0) == 0);  // encoded, not raw UTF-8
  CHECK(received.raw.find("To: ops@example.com, dev@example.com\r\n") != std::string::npos);
  CHECK(received.raw.find("\r\n\r\nline one\r\n.line with a leading dot\r\nline three") !=
        std::string::npos);

  // TLS is required when asked for: a server without STARTTLS (or TLS on
  // connect) gets nothing in plain text.
  dq::AlertSettings starttls = settings;
  starttls.smtp_security = "starttls";
  auto no_starttls = dq::send_mail(starttls, mail, 3000);
  REQUIRE_FALSE(no_starttls.is_ok());
  dq::AlertSettings tls = settings;
  tls.smtp_security = "tls";
  auto no_tls = dq::send_mail(tls, mail, 3000);
  REQUIRE_FALSE(no_tls.is_ok());
  CHECK(no_tls.status().message().find("smtps://") != std::string::npos);
  CHECK(smtp.mails().size() == 1);

  smtp.stop();
  auto refused = dq::send_mail(settings, mail, 2000);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == dq::Code::kUnavailable);
  CHECK(refused.status().message().find("SMTP smtp://127.0.0.1:") != std::string::npos);
}

TEST_CASE("a subject cannot inject a header") {
  dq::OutgoingMail mail{{"a@example.com"}, "hi\r\nBcc: evil@example.com", "x"};
  std::string text = dq::format_mail("dq@example.com", mail, dq::now_ms());
  CHECK(text.find("\r\nBcc:") == std::string::npos);
  CHECK(text.find("Subject: hi  Bcc: evil@example.com\r\n") != std::string::npos);
}

TEST_CASE("post_webhook: JSON posted; 2xx accepted with its status and time, anything else fails") {
  CallbackServer hook;
  dq::CallbackPolicy policy;
  auto posted =
      dq::post_webhook(hook.url("/hook"), Json{{"kind", "test"}, {"text", "hi"}}, 3000, policy);
  REQUIRE_MESSAGE(posted.is_ok(), posted.status().message());
  CHECK(posted->status == 200);
  CHECK(posted->text().rfind("HTTP 200 in ", 0) == 0);
  REQUIRE(hook.count() == 1);
  auto request = hook.requests()[0];
  CHECK(request.path == "/hook");
  CHECK(request.header("content-type") == "application/json");
  CHECK(Json::parse(request.body) == Json{{"kind", "test"}, {"text", "hi"}});
  hook.answer_with({}, 503);
  auto failed = dq::post_webhook(hook.url("/hook"), Json::object(), 3000, policy);
  REQUIRE_FALSE(failed.is_ok());
  CHECK(failed.status().message().find("HTTP 503") != std::string::npos);
}

TEST_CASE("alert settings: validated per key, stored in SQLite, password hidden") {
  TempDir dir;
  auto registry = dq::Registry::open(dir.path + "/dq.db");
  REQUIRE(registry.is_ok());
  dq::AlertSettings settings;
  CHECK_FALSE(dq::apply_alert_setting(&settings, "smtp_port", "70000").is_ok());
  CHECK_FALSE(dq::apply_alert_setting(&settings, "smtp_security", "ssl").is_ok());
  CHECK_FALSE(dq::apply_alert_setting(&settings, "to", "not-an-address").is_ok());
  CHECK_FALSE(dq::apply_alert_setting(&settings, "webhook_url", "ftp://x").is_ok());
  CHECK_FALSE(dq::apply_alert_setting(&settings, "smtp_hots", "x").is_ok());
  REQUIRE(dq::apply_alert_setting(&settings, "smtp_host", "mail.example.com").is_ok());
  REQUIRE(dq::apply_alert_setting(&settings, "smtp_security", "starttls").is_ok());
  REQUIRE(dq::apply_alert_setting(&settings, "smtp_password", "s3cret").is_ok());
  REQUIRE(dq::save_alert_settings(**registry, dq::Config(), settings).is_ok());
  auto loaded = dq::load_alert_settings(**registry);
  REQUIRE(loaded.is_ok());
  CHECK(loaded->smtp_host == "mail.example.com");
  CHECK(loaded->smtp_security == "starttls");
  CHECK(loaded->smtp_password == "s3cret");
  CHECK(loaded->to_json()["smtp_password"] == "***");
}

TEST_CASE("dqctl alert set, show and test: the test mail and webhook arrive, answers printed") {
  TempDir dir;
  std::string config = write_config(dir);
  TestSmtp smtp;
  CallbackServer hook;
  auto set = dq::test::run_dqctl(
      {"-c", config, "alert", "set", "--smtp-host", "127.0.0.1", "--smtp-port",
       std::to_string(smtp.port()), "--from", "dq@example.com", "--to",
       "ops@example.com,dev@example.com", "--webhook", hook.url("/hook"), "--smtp-password", "-s"},
      dir.path);
  REQUIRE_MESSAGE(set.exit_code == 0, set.err);

  auto bad = dq::test::run_dqctl({"-c", config, "alert", "set", "--smtp-port", "0"}, dir.path);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("smtp_port") != std::string::npos);
  auto unknown = dq::test::run_dqctl({"-c", config, "alert", "set", "--smtp", "x"}, dir.path);
  CHECK(unknown.exit_code == 2);

  auto show = dq::test::run_dqctl({"-c", config, "--json", "alert", "show"}, dir.path);
  REQUIRE_MESSAGE(show.exit_code == 0, show.err);
  Json shown = Json::parse(show.out);
  CHECK(shown["settings"]["smtp_host"] == "127.0.0.1");
  CHECK(shown["settings"]["smtp_port"] == smtp.port());
  CHECK(shown["settings"]["to"] == "ops@example.com,dev@example.com");
  CHECK(shown["settings"]["smtp_password"] == "***");
  CHECK(show.out.find("\"-s\"") == std::string::npos);

  auto tested = dq::test::run_dqctl({"-c", config, "alert", "test"}, dir.path);
  CHECK_MESSAGE(tested.exit_code == 0, (tested.out + tested.err));
  CHECK(tested.out.find("mail: accepted: 250 OK queued as 1") != std::string::npos);
  CHECK(tested.out.find("webhook: accepted: HTTP 200") != std::string::npos);
  REQUIRE(smtp.wait_for(1, 5000));
  CHECK(smtp.mails()[0].subject.rfind("[dq] test alert from ", 0) == 0);
  CHECK(smtp.mails()[0].envelope_to.size() == 2);
  REQUIRE(hook.count() == 1);
  CHECK(Json::parse(hook.requests()[0].body)["kind"] == "test");

  smtp.stop();
  hook.answer_with({}, 500);
  auto failing = dq::test::run_dqctl({"-c", config, "alert", "test"}, dir.path);
  CHECK(failing.exit_code == 1);
  CHECK(failing.out.find("mail: FAILED: SMTP smtp://127.0.0.1:") != std::string::npos);
  CHECK(failing.out.find("webhook: FAILED:") != std::string::npos);
  CHECK(failing.out.find("HTTP 500") != std::string::npos);
}

TEST_CASE("an alert event goes into exactly one message; a message is claimed by one sender") {
  TempDir dir;
  std::string path = dir.path + "/dq.db";
  auto outbox = dq::AlertOutbox::open(path);
  auto messages = dq::AlertMessages::open(path);
  auto other = dq::AlertMessages::open(path);
  REQUIRE(outbox.is_ok());
  REQUIRE(messages.is_ok());
  REQUIRE(other.is_ok());
  auto event = (*outbox)->queue(dq::crash_loop_alert("dq-timer_0", "exited with status 1", 1000));
  REQUIRE(event.is_ok());
  CHECK((*outbox)->unsent(10)->at(0).kind == "crash_loop");

  dq::AlertMessage message;
  message.kind = "crash_loop";
  message.subject = "s";
  message.text = "t";
  message.created_at_ms = 2000;
  REQUIRE((*messages)->add(message, {*event}).is_ok());
  CHECK((*outbox)->unsent(10)->empty());
  auto again = (*other)->add(message, {*event});
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.status().code() == dq::Code::kConflict);
  REQUIRE((*messages)->recent(10)->size() == 1);  // the conflicting one was rolled back

  auto due = (*messages)->due(3000, 10);
  REQUIRE(due->size() == 1);
  auto due_too = (*other)->due(3000, 10);
  REQUIRE(due_too->size() == 1);
  CHECK(*(*messages)->claim((*due)[0], 9000) == true);
  CHECK(*(*other)->claim((*due_too)[0], 9000) == false);
  CHECK((*messages)->due(3000, 10)->empty());

  dq::AlertMessage sent = (*due)[0];
  sent.mail_state = "sent";
  sent.webhook_state = "off";
  sent.sent_at_ms = 4000;
  REQUIRE((*messages)->update(sent).is_ok());
  CHECK((*messages)->due(100000, 10)->empty());
  CHECK((*messages)->recent(1)->at(0).sent_at_ms == 4000);
}

TEST_CASE(
    "shard tracker: down after down_after failures in a row, up after up_after successes, "
    "each change once") {
  dq::CheckedShard start;
  start.name = "127.0.0.1:1";
  start.since_ms = 0;
  dq::ShardTracker tracker(start, 3, 2);
  CHECK_FALSE(tracker.record_failure("refused", 100));
  CHECK_FALSE(tracker.record_failure("refused", 200));
  CHECK_FALSE(tracker.record_ok(300));  // one good check resets the count
  CHECK_FALSE(tracker.record_failure("refused", 400));
  CHECK_FALSE(tracker.record_failure("refused", 500));
  auto down = tracker.record_failure("timeout", 600);
  REQUIRE(down);
  CHECK_FALSE(down->up);
  CHECK(down->reason == "timeout");
  CHECK(down->down_since_ms == 400);
  CHECK(tracker.health().since_ms == 400);
  CHECK_FALSE(tracker.record_failure("refused", 700));  // still down: no second change
  CHECK(tracker.health().reason == "refused");
  CHECK_FALSE(tracker.record_ok(800));
  CHECK_FALSE(tracker.record_failure("refused", 900));
  CHECK_FALSE(tracker.record_ok(1000));
  auto up = tracker.record_ok(1100);
  REQUIRE(up);
  CHECK(up->up);
  CHECK(up->at_ms - up->down_since_ms == 700);
  CHECK(tracker.health().up);
  CHECK(tracker.health().reason.empty());
  CHECK_FALSE(tracker.record_ok(1200));

  // A checker started while a shard is known down (reload) alerts only the recovery.
  dq::CheckedShard known = tracker.health();
  known.up = false;
  known.since_ms = 5000;
  dq::ShardTracker after_reload(known, 3, 2);
  CHECK_FALSE(after_reload.record_failure("refused", 6000));
  CHECK_FALSE(after_reload.record_failure("refused", 6100));
  CHECK_FALSE(after_reload.record_failure("refused", 6200));
  CHECK_FALSE(after_reload.record_ok(6300));
  auto back = after_reload.record_ok(6400);
  REQUIRE(back);
  CHECK(back->down_since_ms == 5000);
}

TEST_CASE("shard health file: written atomically, read back; the view ignores a stale report") {
  TempDir dir;
  std::string pid_file = dir.path + "/dqd.pid";
  CHECK(dq::read_shard_health(pid_file).status().code() == dq::Code::kNotFound);
  dq::ShardHealthView view(pid_file, 0);
  CHECK_FALSE(view.is_down("127.0.0.1:1"));

  dq::ShardHealthReport report;
  report.updated_at_ms = dq::now_ms();
  report.interval_ms = 1000;
  dq::CheckedShard down;
  down.name = "127.0.0.1:1";
  down.up = false;
  down.reason = "refused";
  down.since_ms = 42;
  down.problems = {"fix it"};
  dq::CheckedShard up;
  up.name = "127.0.0.1:2";
  report.shards = {down, up};
  REQUIRE(dq::write_shard_health(pid_file, report).is_ok());
  auto read = dq::read_shard_health(pid_file);
  REQUIRE(read.is_ok());
  REQUIRE(read->shards.size() == 2);
  CHECK(read->find("127.0.0.1:1")->reason == "refused");
  CHECK(read->find("127.0.0.1:1")->since_ms == 42);
  CHECK(read->find("127.0.0.1:1")->problems == std::vector<std::string>{"fix it"});
  CHECK(view.is_down("127.0.0.1:1"));
  CHECK_FALSE(view.is_down("127.0.0.1:2"));
  CHECK_FALSE(view.is_down("127.0.0.1:3"));  // unknown: not down
  std::string metrics = dq::shard_health_metrics(*read);
  CHECK(metrics.find("dq_redis_shard_checked_up{shard=\"127.0.0.1:1\"} 0\n") != std::string::npos);
  CHECK(metrics.find("dq_redis_shard_checked_up{shard=\"127.0.0.1:2\"} 1\n") != std::string::npos);

  report.updated_at_ms = dq::now_ms() - 60000;  // the checker stopped writing a minute ago
  REQUIRE(dq::write_shard_health(pid_file, report).is_ok());
  dq::ShardHealthView fresh_view(pid_file, 0);
  CHECK_FALSE(fresh_view.is_down("127.0.0.1:1"));
}

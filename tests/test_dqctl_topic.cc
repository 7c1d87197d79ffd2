// Runs the built dqctl binary against a temp config and SQLite registry and
// checks each `topic` subcommand's output and exit code, errors included.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/registry/registry.h"
#include "common/store/job_store.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::test::contains;
using dq::test::RunResult;

namespace {

// A temp dir with dq.ini ([sqlite] path = var/dq.db, [log] dir = log, and
// the Redis shards `topic del` asks; by default one nothing listens on).
// The registry is this host's alone ([registry] shared = no): these cases
// are dqctl against SQLite, with no Redis to hold a shared copy
// (tests/test_shared_registry.cc covers dqctl with one).
struct CtlFixture {
  explicit CtlFixture(const std::string& shards = "127.0.0.1:1") {
    char pattern[] = "/tmp/dq-dqctl-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir = pattern;
    config = dir + "/dq.ini";
    std::ofstream(config) << "[sqlite]\npath = var/dq.db\n[log]\ndir = log\n[registry]\n"
                          << "shared = no\n[redis]\nshards = " << shards
                          << "\nstart_local = no\nconnect_timeout_ms = 500\n";
  }
  ~CtlFixture() { std::filesystem::remove_all(dir); }

  std::string db_path() const { return dir + "/var/dq.db"; }

  // Runs build/dqctl with args (no implicit -c) in working dir cwd.
  RunResult run_raw(const std::vector<std::string>& args, const std::string& cwd = "") const {
    return dq::test::run_dqctl(args, dir, "", cwd);
  }

  // Runs `dqctl -c <config> args...`.
  RunResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-c", config});
    return run_raw(args);
  }

  std::unique_ptr<dq::Registry> registry() const {
    auto opened = dq::Registry::open(db_path());
    REQUIRE_MESSAGE(opened.is_ok(), opened.status().message());
    return std::move(*opened);
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

}  // namespace

TEST_CASE("help, version and global usage errors") {
  CtlFixture ctl;
  RunResult help = ctl.run_raw({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(contains(help.out, "topic add NAME --callback URL"));
  CHECK(contains(help.out, "topic del NAME"));
  CHECK(contains(help.out, "exit codes"));
  CHECK(contains(help.out, "3  cannot reach"));

  RunResult version = ctl.run_raw({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("dqctl ", 0) == 0);

  CHECK(ctl.run_raw({}).exit_code == 2);
  RunResult unknown = ctl.run_raw({"-c", ctl.config, "frobnicate"});
  CHECK(unknown.exit_code == 2);
  CHECK(contains(unknown.err, "unknown command 'frobnicate'"));
  CHECK(ctl.run_raw({"--bogus", "topic", "list"}).exit_code == 2);
  CHECK(ctl.run_raw({"-s", "nohostport", "topic", "list"}).exit_code == 2);
  CHECK(ctl.run_raw({"-c"}).exit_code == 2);
  RunResult no_config = ctl.run_raw({"-c", ctl.dir + "/missing.ini", "topic", "list"});
  CHECK(no_config.exit_code == 2);
  CHECK(contains(no_config.err, "missing.ini"));
}

TEST_CASE("add, list, show: human and JSON output") {
  CtlFixture ctl;
  RunResult empty = ctl.run({"topic", "list"});
  CHECK(empty.exit_code == 0);
  CHECK(contains(empty.out, "NAME"));
  CHECK_FALSE(contains(empty.out, "orders"));

  RunResult added = ctl.run({"topic",
                             "add",
                             "orders",
                             "--callback",
                             "http://127.0.0.1:8080/check",
                             "--delay",
                             "600",
                             "--priority",
                             "1",
                             "--method",
                             "get",
                             "--timeout-ms=2500",
                             "--max-attempts",
                             "5",
                             "--email",
                             "ops@x.io,dev@x.io",
                             "--retry-ms",
                             "1000,3000",
                             "--creator",
                             "alice"});
  CHECK_MESSAGE(added.exit_code == 0, added.err);
  CHECK(contains(added.out, "orders"));
  REQUIRE(ctl.run({"topic", "add", "billing", "--callback", "https://pay.example/cb"}).exit_code ==
          0);

  RunResult list = ctl.run({"topic", "list"});
  CHECK(list.exit_code == 0);
  std::istringstream lines(list.out);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  CHECK(contains(header, "STATUS"));
  CHECK(contains(header, "CALLBACK"));
  CHECK(first.rfind("billing", 0) == 0);  // sorted by name
  CHECK(contains(first, "POST"));
  CHECK(contains(first, "https://pay.example/cb"));
  CHECK(second.rfind("orders", 0) == 0);
  CHECK(contains(second, "online"));
  CHECK(contains(second, "GET"));

  RunResult show = ctl.run({"topic", "show", "orders"});
  CHECK(show.exit_code == 0);
  CHECK(contains(show.out, "callback_url:"));
  CHECK(contains(show.out, "http://127.0.0.1:8080/check"));
  CHECK(contains(show.out, "default_delay_s: 600"));
  CHECK(contains(show.out, "alert_emails:    ops@x.io,dev@x.io"));

  dq::Json shown = ctl.json({"topic", "show", "orders"});
  // The admin API's topic object, field for field (common/registry/topic_json.h).
  std::vector<std::string> keys;
  for (const auto& member : shown.items()) {
    keys.push_back(member.key());
  }
  std::sort(keys.begin(), keys.end());
  // tz ("" by default: the server's zone), on its own line too.
  auto tz = std::find(keys.begin(), keys.end(), "tz");
  REQUIRE(tz != keys.end());
  CHECK(shown["tz"] == "");
  keys.erase(tz);
  // delivery_window ("" by default: any hour), on its own line too.
  auto window = std::find(keys.begin(), keys.end(), "delivery_window");
  REQUIRE(window != keys.end());
  CHECK(shown["delivery_window"] == "");
  keys.erase(window);
  // mode ("push" by default; "pull": workers reserve the jobs), on its own line too.
  auto mode = std::find(keys.begin(), keys.end(), "mode");
  REQUIRE(mode != keys.end());
  CHECK(shown["mode"] == "push");
  keys.erase(mode);
  // dead_callback, dedup_window_s and max_retry_duration_s checked on their own lines, so the list
  // below merges with other new settings.
  auto dead_callback = std::find(keys.begin(), keys.end(), "dead_callback");
  REQUIRE(dead_callback != keys.end());
  keys.erase(dead_callback);
  auto dedup_window = std::find(keys.begin(), keys.end(), "dedup_window_s");
  REQUIRE(dedup_window != keys.end());
  keys.erase(dedup_window);
  auto max_retry_duration = std::find(keys.begin(), keys.end(), "max_retry_duration_s");
  REQUIRE(max_retry_duration != keys.end());
  CHECK(shown["max_retry_duration_s"] == 604800);
  keys.erase(max_retry_duration);
  // A job's life: ttl, keep_done_days, late_policy and their defaults.
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, dq::Json>>{{"ttl", 0},
                                                     {"keep_done_days", 0},
                                                     {"late_policy", "deliver"},
                                                     {"on_dependency_dead", "dead"}}) {
    auto found = std::find(keys.begin(), keys.end(), key);
    REQUIRE(found != keys.end());
    CHECK(shown[key] == value);
    keys.erase(found);
  }
  CHECK(keys == std::vector<std::string>{"alert_emails",
                                         "callback_format",
                                         "callback_url",
                                         "circuit_breaker",
                                         "circuit_failures",
                                         "circuit_open_ms",
                                         "created_at_ms",
                                         "creator",
                                         "dead_on",
                                         "default_delay_s",
                                         "max_attempts",
                                         "max_burst",
                                         "max_deferrals",
                                         "max_in_flight",
                                         "max_rate",
                                         "method",
                                         "name",
                                         "online",
                                         "priority",
                                         "retry_jitter",
                                         "retry_ms",
                                         "signing_keys",
                                         "signing_public_key",
                                         "signing_secret",
                                         "success_json",
                                         "timeout_ms",
                                         "updated_at_ms",
                                         "version"});
  CHECK(shown["name"] == "orders");
  CHECK(shown["online"] == true);
  CHECK(shown["method"] == "GET");
  CHECK(shown["timeout_ms"] == 2500);
  CHECK(shown["default_delay_s"] == 600);
  CHECK(shown["max_attempts"] == 5);
  CHECK(shown["priority"] == 1);
  CHECK(shown["retry_ms"] == "1000,3000");
  CHECK(shown["creator"] == "alice");
  CHECK(shown["created_at_ms"].get<int64_t>() > 0);

  dq::Json listed = ctl.json({"topic", "list"});
  REQUIRE(listed.is_array());
  REQUIRE(listed.size() == 2);
  CHECK(listed[0]["name"] == "billing");
  CHECK(listed[1]["callback_url"] == "http://127.0.0.1:8080/check");

  // What dqctl wrote is what the library (and so every dqd child) reads.
  auto topic = ctl.registry()->get_topic("orders");
  REQUIRE(topic.is_ok());
  CHECK(topic->priority == 1);
  CHECK(topic->alert_emails == "ops@x.io,dev@x.io");
}

TEST_CASE("set, online, offline, del") {
  dq::test::TestRedis redis;
  CtlFixture ctl(redis.address());
  REQUIRE(ctl.run({"topic", "add", "orders", "--callback", "http://a/cb"}).exit_code == 0);

  RunResult set =
      ctl.run({"topic", "set", "orders", "--callback", "http://b/cb", "--priority", "3"});
  CHECK_MESSAGE(set.exit_code == 0, set.err);
  auto topic = ctl.registry()->get_topic("orders");
  REQUIRE(topic.is_ok());
  CHECK(topic->callback_url == "http://b/cb");
  CHECK(topic->priority == 3);
  CHECK(topic->method == "POST");  // untouched options stay

  // The PHP delay queue's callback format and success rule (docs/migrating-from-php-dq.md).
  RunResult php =
      ctl.run({"topic", "set", "orders", "--format", "FORM", "--success-json", "data.code=0"});
  CHECK_MESSAGE(php.exit_code == 0, php.err);
  CHECK(ctl.registry()->get_topic("orders")->callback_format == "form");
  CHECK(ctl.registry()->get_topic("orders")->success_json == "data.code=0");
  dq::Json shown = ctl.json({"topic", "show", "orders"});
  CHECK(shown["callback_format"] == "form");
  CHECK(shown["success_json"] == "data.code=0");
  CHECK(contains(ctl.run({"topic", "show", "orders"}).out, "success_json:    data.code=0"));
  REQUIRE(ctl.run({"topic", "set", "orders", "--success-json", ""}).exit_code == 0);
  CHECK(ctl.registry()->get_topic("orders")->success_json.empty());
  CHECK(ctl.registry()->get_topic("orders")->callback_format == "form");

  // Caps per topic (docs/delivery.md).
  RunResult capped = ctl.run(
      {"topic", "set", "orders", "--max-in-flight", "2", "--max-rate", "50", "--max-burst", "7"});
  CHECK_MESSAGE(capped.exit_code == 0, capped.err);
  CHECK(ctl.registry()->get_topic("orders")->max_in_flight == 2);
  CHECK(ctl.registry()->get_topic("orders")->max_rate == 50);
  CHECK(ctl.registry()->get_topic("orders")->max_burst == 7);
  shown = ctl.json({"topic", "show", "orders"});
  CHECK(shown["max_in_flight"] == 2);
  CHECK(shown["max_rate"] == 50);
  CHECK(shown["max_burst"] == 7);
  CHECK(
      contains(ctl.run({"topic", "show", "orders"}).out, "max_in_flight:   2 calls open at once"));
  REQUIRE(ctl.run({"topic", "set", "orders", "--max-burst", "0"}).exit_code == 0);
  CHECK(contains(ctl.run({"topic", "show", "orders"}).out,
                 "max_burst:       5 (a tenth of max_rate)"));

  // A topic's time zone: a name of the tz database, or "" for the server's.
  RunResult zoned = ctl.run({"topic", "set", "orders", "--tz", "Asia/Shanghai"});
  CHECK_MESSAGE(zoned.exit_code == 0, zoned.err);
  CHECK(ctl.registry()->get_topic("orders")->tz == "Asia/Shanghai");
  CHECK(contains(ctl.run({"topic", "show", "orders"}).out, "Asia/Shanghai"));
  RunResult unknown_zone = ctl.run({"topic", "set", "orders", "--tz", "Mars/Olympus"});
  CHECK(unknown_zone.exit_code != 0);
  CHECK(contains(unknown_zone.err + unknown_zone.out, "tz: "));
  CHECK(ctl.registry()->get_topic("orders")->tz == "Asia/Shanghai");
  CHECK(ctl.run({"topic", "set", "orders", "--tz", ""}).exit_code == 0);
  CHECK(ctl.registry()->get_topic("orders")->tz.empty());

  // A job's life: ttl, keep_done_days, late_policy; a bad value changes nothing.
  RunResult life = ctl.run({"topic", "set", "orders", "--ttl", "3600", "--keep-done-days", "7",
                            "--late-policy", "dead_after:300"});
  CHECK_MESSAGE(life.exit_code == 0, life.err);
  dq::Topic lived = *ctl.registry()->get_topic("orders");
  CHECK(lived.ttl == 3600);
  CHECK(lived.keep_done_days == 7);
  CHECK(lived.late_policy == "dead_after:300");
  CHECK(contains(ctl.run({"topic", "show", "orders"}).out, "dead_after:300"));
  for (const auto& bad : std::vector<std::vector<std::string>>{{"--late-policy", "dead_after:0"},
                                                               {"--late-policy", "sometimes"},
                                                               {"--keep-done-days", "400"},
                                                               {"--ttl", "-1"}}) {
    std::vector<std::string> args{"topic", "set", "orders", bad[0], bad[1]};
    RunResult refused = ctl.run(args);
    CHECK_MESSAGE(refused.exit_code != 0, bad[0] << " " << bad[1]);
  }
  CHECK(ctl.registry()->get_topic("orders")->late_policy == "dead_after:300");
  CHECK(ctl.registry()->get_topic("orders")->keep_done_days == 7);

  // A delivery window: checked when set (the refusal names the word), "off" removes it.
  RunResult windowed =
      ctl.run({"topic", "set", "orders", "--delivery-window", "Mon-Fri 09:00-18:00 Asia/Shanghai"});
  CHECK_MESSAGE(windowed.exit_code == 0, windowed.err);
  CHECK(ctl.registry()->get_topic("orders")->delivery_window ==
        "Mon-Fri 09:00-18:00 Asia/Shanghai");
  CHECK(contains(ctl.run({"topic", "show", "orders"}).out, "Mon-Fri 09:00-18:00 Asia/Shanghai"));
  RunResult bad_window =
      ctl.run({"topic", "set", "orders", "--delivery-window", "Mon-Fry 09:00-18:00"});
  CHECK(bad_window.exit_code != 0);
  CHECK(contains(bad_window.err + bad_window.out, "delivery_window: "));
  CHECK(contains(bad_window.err + bad_window.out, "Fry"));
  CHECK(ctl.registry()->get_topic("orders")->delivery_window ==
        "Mon-Fri 09:00-18:00 Asia/Shanghai");
  CHECK(ctl.run({"topic", "set", "orders", "--delivery-window", "off"}).exit_code == 0);
  CHECK(ctl.registry()->get_topic("orders")->delivery_window.empty());

  // Nothing waits forever (docs/delivery.md): max_retry_duration_s.
  RunResult bounded = ctl.run({"topic", "set", "orders", "--max-retry-duration-s", "3600"});
  CHECK_MESSAGE(bounded.exit_code == 0, bounded.err);
  CHECK(ctl.registry()->get_topic("orders")->max_retry_duration_s == 3600);
  CHECK(ctl.json({"topic", "show", "orders"})["max_retry_duration_s"] == 3600);
  CHECK(contains(ctl.run({"topic", "show", "orders"}).out, "max_retry_duration_s:"));
  RunResult negative = ctl.run({"topic", "set", "orders", "--max-retry-duration-s", "-1"});
  CHECK(negative.exit_code != 0);
  CHECK(contains(negative.err + negative.out, "max_retry_duration_s"));
  CHECK(ctl.registry()->get_topic("orders")->max_retry_duration_s == 3600);

  RunResult offline = ctl.run({"topic", "offline", "orders"});
  CHECK(offline.exit_code == 0);
  CHECK(contains(offline.out, "offline"));
  CHECK_FALSE(ctl.registry()->get_topic("orders")->online);
  CHECK(ctl.json({"topic", "show", "orders"})["online"] == false);
  CHECK(ctl.run({"topic", "offline", "orders"}).exit_code == 0);  // already offline: still fine

  dq::Json online = ctl.json({"topic", "online", "orders"});
  CHECK(online["online"] == true);
  CHECK(ctl.registry()->get_topic("orders")->online);
  CHECK(ctl.registry()->get_topic("orders")->callback_url == "http://b/cb");

  RunResult del = ctl.run({"topic", "del", "orders"});
  CHECK(del.exit_code == 0);
  CHECK(ctl.registry()->get_topic("orders").status().code() == dq::Code::kNotFound);
  dq::Json listed = ctl.json({"topic", "list"});
  CHECK(listed.empty());
}

TEST_CASE("global options are accepted after the command too") {
  CtlFixture ctl;
  RunResult added = ctl.run_raw(
      {"topic", "add", "orders", "--callback", "http://a/cb", "-c", ctl.config, "--creator", "-s"});
  CHECK_MESSAGE(added.exit_code == 0, added.err);
  auto topic = ctl.registry()->get_topic("orders");
  REQUIRE(topic.is_ok());
  CHECK(topic->creator == "-s");  // a command option's value is never taken as a global option

  RunResult listed = ctl.run_raw({"topic", "list", "--json", "--config=" + ctl.config});
  CHECK_MESSAGE(listed.exit_code == 0, listed.err);
  dq::Json list = dq::Json::parse(listed.out, nullptr, false);
  REQUIRE(list.is_array());
  REQUIRE(list.size() == 1);
  CHECK(list[0]["name"] == "orders");

  RunResult shown = ctl.run_raw({"--json", "topic", "show", "orders", "--config", ctl.config});
  CHECK_MESSAGE(shown.exit_code == 0, shown.err);
  CHECK(dq::Json::parse(shown.out, nullptr, false)["creator"] == "-s");

  // Mixed with the command's own options, in any order.
  RunResult set = ctl.run_raw(
      {"topic", "set", "orders", "--priority", "2", "--json", "-c", ctl.config, "--method", "get"});
  CHECK_MESSAGE(set.exit_code == 0, set.err);
  dq::Json changed = dq::Json::parse(set.out, nullptr, false);
  CHECK(changed["priority"] == 2);
  CHECK(changed["method"] == "GET");

  CHECK(ctl.run_raw({"topic", "list", "-c"}).exit_code == 2);  // missing value
  CHECK(ctl.run_raw({"topic", "list", "-s", "nohostport", "-c", ctl.config}).exit_code == 2);
  // After "--" nothing is a global option: the command sees (and refuses) it.
  RunResult after_dashes = ctl.run({"topic", "list", "--", "--json"});
  CHECK(after_dashes.exit_code == 2);
  CHECK(contains(after_dashes.err, "usage:"));
}

TEST_CASE("not found and conflict exit 1 with the reason on stderr") {
  CtlFixture ctl;
  REQUIRE(ctl.run({"topic", "add", "orders", "--callback", "http://a/cb"}).exit_code == 0);

  RunResult dup = ctl.run({"topic", "add", "orders", "--callback", "http://other/cb"});
  CHECK(dup.exit_code == 1);
  CHECK(contains(dup.err, "already exists"));
  CHECK(dup.out.empty());
  CHECK(ctl.registry()->get_topic("orders")->callback_url == "http://a/cb");

  for (const char* sub : {"show", "online", "offline", "del"}) {
    RunResult missing = ctl.run({"topic", sub, "ghost"});
    INFO(sub);
    CHECK(missing.exit_code == 1);
    CHECK(contains(missing.err, "'ghost' does not exist"));
  }
  RunResult set_missing = ctl.run({"topic", "set", "ghost", "--priority", "1"});
  CHECK(set_missing.exit_code == 1);
  CHECK(contains(set_missing.err, "does not exist"));
}

TEST_CASE("invalid values exit 1, name the field and change nothing") {
  CtlFixture ctl;
  REQUIRE(ctl.run({"topic", "add", "orders", "--callback", "http://a/cb"}).exit_code == 0);

  struct Case {
    std::vector<std::string> args;
    const char* field;
  };
  std::vector<Case> cases = {
      {{"topic", "add", "bad:name", "--callback", "http://a/cb"}, "name"},
      {{"topic", "add", "fresh", "--callback", "ftp://a/cb"}, "callback_url"},
      {{"topic", "add", "fresh", "--callback", "http://a/cb", "--method", "PUT"}, "method"},
      {{"topic", "add", "fresh", "--callback", "http://a/cb", "--timeout-ms", "0"}, "timeout_ms"},
      {{"topic", "add", "fresh", "--callback", "http://a/cb", "--delay", "-1"}, "default_delay_s"},
      {{"topic", "add", "fresh", "--callback", "http://a/cb", "--max-attempts", "1001"},
       "max_attempts"},
      {{"topic", "add", "fresh", "--callback", "http://a/cb", "--priority", "4"}, "priority"},
      {{"topic", "add", "fresh", "--callback", "http://a/cb", "--retry-ms", "1000,x"}, "retry_ms"},
      {{"topic", "add", "fresh", "--callback", "http://a/cb", "--email", "nobody"}, "alert_emails"},
      {{"topic", "set", "orders", "--priority", "0"}, "priority"},
      {{"topic", "set", "orders", "--callback", "http://"}, "callback_url"},
      {{"topic", "set", "orders", "--format", "xml"}, "callback_format"},
      {{"topic", "set", "orders", "--success-json", "code"}, "success_json"},
      {{"topic", "set", "orders", "--success-json", "a b=1"}, "success_json"},
      {{"topic", "set", "orders", "--max-in-flight", "-1"}, "max_in_flight"},
      {{"topic", "set", "orders", "--max-rate", "-3"}, "max_rate"},
      {{"topic", "set", "orders", "--max-burst", "5"}, "max_burst"},  // no max_rate
  };
  for (const Case& c : cases) {
    RunResult result = ctl.run(c.args);
    INFO(c.args[1] << " " << c.args[2] << " -> " << result.err);
    CHECK(result.exit_code == 1);
    CHECK(contains(result.err, std::string(c.field) + ":"));
  }
  auto topics = ctl.registry()->list_topics();
  REQUIRE(topics.is_ok());
  REQUIRE(topics->size() == 1);
  CHECK(topics->front().priority == 2);
  CHECK(topics->front().callback_url == "http://a/cb");
}

TEST_CASE("usage errors exit 2 before touching the database") {
  CtlFixture ctl;
  std::vector<std::vector<std::string>> cases = {
      {"topic"},
      {"topic", "frob"},
      {"topic", "list", "extra"},
      {"topic", "show"},
      {"topic", "show", "a", "b"},
      {"topic", "del", "a", "--force"},
      {"topic", "add", "orders"},  // no --callback
      {"topic", "add", "orders", "--callback"},
      {"topic", "add", "orders", "--callback", "http://a/cb", "--timeout-ms", "fast"},
      {"topic", "add", "orders", "--callback", "http://a/cb", "--delay", "1.5"},
      {"topic", "add", "orders", "--callback", "http://a/cb", "--colour", "red"},
      {"topic", "set", "orders"},  // nothing to change
  };
  for (const auto& args : cases) {
    RunResult result = ctl.run(args);
    std::string joined;
    for (const auto& arg : args) {
      joined += arg + " ";
    }
    INFO(joined << "-> " << result.err);
    CHECK(result.exit_code == 2);
    CHECK(contains(result.err, "usage:"));
  }
  CHECK_FALSE(std::filesystem::exists(ctl.db_path()));
}

TEST_CASE("an unusable database exits 3") {
  CtlFixture ctl;
  std::ofstream(ctl.dir + "/var") << "a file where the folder should be\n";
  RunResult result = ctl.run({"topic", "list"});
  CHECK(result.exit_code == 3);
  CHECK(contains(result.err, "var/dq.db"));
}

TEST_CASE("default config is conf/dq.ini in the current folder") {
  CtlFixture ctl;
  std::filesystem::create_directories(ctl.dir + "/conf");
  std::ofstream(ctl.dir + "/conf/dq.ini")
      << "[sqlite]\npath = ../var/dq.db\n[log]\ndir = ../log\n[registry]\nshared = no\n";
  RunResult added = ctl.run_raw({"topic", "add", "orders", "--callback", "http://a/cb"}, ctl.dir);
  CHECK_MESSAGE(added.exit_code == 0, added.err);
  CHECK(ctl.registry()->get_topic("orders").is_ok());  // dq.ini and conf/dq.ini share var/dq.db
  RunResult listed = ctl.run_raw({"--config=" + ctl.config, "topic", "list"});
  CHECK(listed.exit_code == 0);
  CHECK(contains(listed.out, "orders"));
}

TEST_CASE("callback URLs to Redis, to dq itself or to link-local addresses are refused") {
  CtlFixture ctl("127.0.0.1:6379");
  // The default config: shard 127.0.0.1:6379, API 127.0.0.1:6780, legacy 127.0.0.1:6789.
  struct Case {
    const char* url;
    const char* why;
  };
  for (const Case& c : {
           Case{"http://169.254.169.254/latest/meta-data/", "link-local"},
           Case{"http://[fe80::1%25eth0]/x", "link-local"},
           Case{"http://127.0.0.1:6379/", "Redis shard 127.0.0.1:6379"},
           Case{"http://localhost:6379/x", "Redis shard 127.0.0.1:6379"},
           Case{"http://[::1]:6780/v1/topics/t/jobs", "API listen address 127.0.0.1:6780"},
           Case{"http://127.0.0.1:6789/", "legacy protocol listen address"},
       }) {
    RunResult result = ctl.run({"topic", "add", "t", "--callback", c.url});
    INFO(c.url << " -> " << result.err);
    CHECK(result.exit_code == 1);
    CHECK(contains(result.err, "dqctl: callback_url: "));
    CHECK(contains(result.err, c.why));
  }
  // A shard added in the registry (as the admin helper would) counts too.
  REQUIRE(ctl.registry()->add_extra_shard("10.9.9.9:7000", "pw").is_ok());
  RunResult extra = ctl.run({"topic", "add", "t", "--callback", "http://10.9.9.9:7000/"});
  CHECK(extra.exit_code == 1);
  CHECK(contains(extra.err, "Redis shard 10.9.9.9:7000"));
  REQUIRE(ctl.run({"topic", "add", "t", "--callback", "http://127.0.0.1:8080/cb"}).exit_code == 0);
  RunResult set = ctl.run({"topic", "set", "t", "--callback", "http://localhost:6379/"});
  CHECK(set.exit_code == 1);
  CHECK(contains(set.err, "Redis shard 127.0.0.1:6379"));
  auto topic = ctl.registry()->get_topic("t");
  REQUIRE(topic.is_ok());
  CHECK(topic->callback_url == "http://127.0.0.1:8080/cb");
}

TEST_CASE("[consumer] callback_allow_hosts: only the hosts listed") {
  CtlFixture ctl;
  std::ofstream(ctl.config, std::ios::app)
      << "[consumer]\ncallback_allow_hosts = hooks.example.com, 10.0.0.7\n";
  CHECK(ctl.run({"topic", "add", "a", "--callback", "https://hooks.example.com/x"}).exit_code == 0);
  CHECK(ctl.run({"topic", "add", "b", "--callback", "http://10.0.0.7:9000/x"}).exit_code == 0);
  RunResult refused = ctl.run({"topic", "add", "c", "--callback", "https://other.example.com/x"});
  CHECK(refused.exit_code == 1);
  CHECK(contains(refused.err,
                 "host 'other.example.com' is not in [consumer] callback_allow_hosts "
                 "(hooks.example.com, 10.0.0.7)"));
  CHECK_FALSE(ctl.registry()->get_topic("c").is_ok());
}

namespace {

// What a shard holds of `topic`, from `TestRedis::dump_all` (a line per key,
// then one per hash field, set or list member): keys named after the topic
// ("{dq}:ready:orders") and fields or members of its jobs or counters
// ("orders:o-1", "orders:added").
std::vector<std::string> traces_of(dq::test::TestRedis& redis, const std::string& topic) {
  std::vector<std::string> found;
  std::istringstream dump(redis.dump_all());
  std::string line;
  while (std::getline(dump, line)) {
    bool is_item = line.rfind("  ", 0) == 0;
    if (is_item ? line.rfind("  " + topic + ":", 0) == 0 : contains(line, ":" + topic + " (")) {
      found.push_back(line);
    }
  }
  return found;
}

// One job of `topic` in each state: delayed, ready, working, retrying (with
// an error) and dead.
void add_jobs_in_every_state(dq::JobStore& store, const std::string& topic) {
  const dq::DueTime now{true, 0};
  for (const char* id : {"working", "retrying", "dead"}) {
    REQUIRE(store.add(topic, id, "{\"n\":1}", now).is_ok());
  }
  REQUIRE(store.promote(0, 100).is_ok());
  auto reserved = store.reserve(0, "r-every-state", {{topic, 60000, 3, 3, 5}}, 3, 1 << 20);
  REQUIRE(reserved.is_ok());
  REQUIRE(store.forget_reserve(0, "r-every-state").is_ok());  // as a consumer does later
  REQUIRE(reserved->jobs.size() == 3);
  std::map<std::string, dq::Lease> leases;
  for (const auto& job : reserved->jobs) {
    leases[job.job.id] = job.lease;
  }
  REQUIRE(store.fail(0, topic, "retrying", leases["retrying"], 600000, 5, "HTTP 500").is_ok());
  REQUIRE(*store.fail(0, topic, "dead", leases["dead"], 1000, 1, "HTTP 500") ==
          dq::FailOutcome::kDead);
  REQUIRE(store.add(topic, "ready", "1", now).is_ok());
  REQUIRE(store.promote(0, 100).is_ok());
  REQUIRE(store.add(topic, "delayed", "[1, 2.50]", dq::DueTime{true, 600000}).is_ok());
  std::map<std::string, dq::JobState> states = {{"working", dq::JobState::kWorking},
                                                {"retrying", dq::JobState::kRetrying},
                                                {"dead", dq::JobState::kDead},
                                                {"ready", dq::JobState::kReady},
                                                {"delayed", dq::JobState::kDelayed}};
  for (const auto& entry : states) {
    const auto& id = entry.first;
    const auto& state = entry.second;
    CAPTURE(id);
    REQUIRE(store.get(topic, id)->state == state);
  }
}

}  // namespace

TEST_CASE("topic del is refused while the topic holds jobs; --purge deletes them too") {
  dq::test::TestRedis redis;
  CtlFixture ctl(redis.address());
  dq::JobStore store({redis.shard()}, 1000, 1000);
  for (const char* name : {"orders", "orders2", "billing"}) {
    REQUIRE(ctl.run({"topic", "add", name, "--callback", "http://a/cb"}).exit_code == 0);
  }
  add_jobs_in_every_state(store, "orders");
  // Neighbours that must survive: a name sharing the prefix, and another topic.
  REQUIRE(store.add("orders2", "keep", "1", dq::DueTime{true, 600000}).is_ok());
  REQUIRE(store.add("billing", "orders:1", "1", dq::DueTime{true, 600000}).is_ok());
  REQUIRE_FALSE(traces_of(redis, "orders").empty());

  RunResult refused = ctl.run({"topic", "del", "orders"});
  CHECK(refused.exit_code == 1);
  CHECK(contains(refused.err, "still holds 5 job(s)"));
  CHECK(contains(refused.err, "--purge"));
  CHECK(refused.out.empty());
  CHECK(ctl.registry()->get_topic("orders").is_ok());
  CHECK(store.get("orders", "dead").is_ok());

  dq::Json purged = ctl.json({"topic", "del", "orders", "--purge"});
  CHECK(purged["deleted"] == "orders");
  CHECK(purged["purged_jobs"] == 5);
  CHECK(ctl.registry()->get_topic("orders").status().code() == dq::Code::kNotFound);
  std::vector<std::string> left = traces_of(redis, "orders");
  CHECK_MESSAGE(left.empty(), left.front());
  CHECK(store.get("orders2", "keep").is_ok());
  CHECK(store.get("billing", "orders:1").is_ok());
  CHECK(ctl.registry()->get_topic("orders2").is_ok());

  // Empty now: a plain del goes through.
  REQUIRE(store.del("orders2", "keep").is_ok());
  RunResult del = ctl.run({"topic", "del", "orders2"});
  CHECK_MESSAGE(del.exit_code == 0, del.err);
  CHECK(contains(del.out, "topic orders2 deleted"));
}

TEST_CASE("topic del --purge says how many jobs were being delivered and still complete") {
  dq::test::TestRedis redis;
  dq::test::CallbackServer callback;
  callback.set_responder([](const dq::test::RecordedRequest&, size_t) {
    dq::test::CallbackAnswer answer;
    answer.delay_ms = 3000;  // every callback still running when the topic goes
    return answer;
  });
  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 1;
  dq::test::DqdProcess dqd(options);
  dq::test::register_topic(dqd, "gone", callback.url());
  dq::test::register_topic(dqd, "gone2", callback.url());
  dqd.start();
  dq::test::HttpClient http;
  const int kInFlight = 6;
  const int kPending = 4;
  for (int i = 0; i < kInFlight + kPending; ++i) {
    double delay = i < kInFlight ? 0 : 600;
    REQUIRE(http.post(dqd.jobs_url("gone"), dq::test::job_doc("g" + std::to_string(i), i, delay))
                .status == 201);
  }
  REQUIRE(callback.wait_for(kInFlight, 10000));
  RunResult purged = dq::test::run_dqctl(
      {"-c", dqd.config_path(), "--json", "topic", "del", "gone", "--purge"}, dqd.dir());
  REQUIRE_MESSAGE(purged.exit_code == 0, purged.err);
  dq::Json out = dq::Json::parse(purged.out);
  CHECK(out["purged_jobs"] == kInFlight + kPending);
  CHECK(out["in_flight_jobs"] == kInFlight);
  // The running callbacks are not stopped: they complete, once each; the
  // pending jobs are gone.
  dq::test::sleep_ms(5000);
  auto count = dq::test::deliveries_by_id(callback);
  size_t delivered = count.size(), duplicated = 0;
  for (const auto& entry : count) duplicated += static_cast<size_t>(entry.second - 1);
  MESSAGE("jobs ", kInFlight + kPending, ", in flight at the purge ", kInFlight, " (reported ",
          out["in_flight_jobs"].get<int>(), "), delivered ", delivered, ", duplicated ",
          duplicated);
  CHECK(delivered == static_cast<size_t>(kInFlight));
  CHECK(duplicated == 0);
  for (int i = 0; i < kInFlight + kPending; ++i) {
    CHECK(http.get(dqd.jobs_url("gone") + "/g" + std::to_string(i)).status == 404);
  }

  // The human form says it too.
  REQUIRE(http.post(dqd.jobs_url("gone2"), dq::test::job_doc("h", 1, 0)).status == 201);
  REQUIRE(callback.wait_for(kInFlight + 1, 10000));
  RunResult human =
      dq::test::run_dqctl({"-c", dqd.config_path(), "topic", "del", "gone2", "--purge"}, dqd.dir());
  CHECK_MESSAGE(human.exit_code == 0, human.err);
  CHECK_MESSAGE(contains(human.out, "topic gone2 deleted with 1 job(s)"), human.out);
  CHECK_MESSAGE(contains(human.out, "1 of them were being delivered and could not be stopped"),
                human.out);
}

TEST_CASE("topic del refuses when a shard cannot be reached, and names it") {
  dq::test::TestRedis redis;
  int dead_port = dq::test::free_port();
  std::string dead = "127.0.0.1:" + std::to_string(dead_port);
  CtlFixture ctl(redis.address() + "," + dead);
  REQUIRE(ctl.run({"topic", "add", "orders", "--callback", "http://a/cb"}).exit_code == 0);
  dq::JobStore store({redis.shard()}, 1000, 1000);
  REQUIRE(store.add("orders", "o-1", "1", dq::DueTime{true, 600000}).is_ok());

  for (bool purge : {false, true}) {
    CAPTURE(purge);
    std::vector<std::string> args = {"topic", "del", "orders"};
    if (purge) {
      args.push_back("--purge");
    }
    RunResult result = ctl.run(args);
    CHECK(result.exit_code == 3);  // cannot reach Redis: dqctl's exit code for that
    CHECK(contains(result.err, dead));
    CHECK(ctl.registry()->get_topic("orders").is_ok());
    CHECK(store.get("orders", "o-1").is_ok());
  }
}

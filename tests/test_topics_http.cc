// Topics over HTTP (PUT, PATCH, DELETE /v1/topics/{topic}) with real dqd
// hosts on real redis-servers: `dqctl --url` manages a remote host's topics
// with an admin token and no config or database of its own, and a topic
// made that way delivers; the three doors (dqctl, the admin page, the HTTP
// API) refuse a bad value with the same words; two hosts sharing the
// registry serve each other's topic writes, and a stale edit is refused
// on either.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "tests/support/admin_client.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;

namespace {

constexpr const char* kPassword = "correct horse battery";
constexpr int kGenerousMs = 15000;  // a deadline to wait on, not a promise

DqdOptions host_options(const std::vector<std::string>& shards, const std::string& extra = "") {
  DqdOptions options;
  options.shards = shards;
  options.timers = 1;
  options.consumers = 1;
  options.admin = true;
  options.extra_ini =
      "[server]\nrequire_token = yes\n[admin]\nuser = admin\n"
      "password_file = admin-password\n" +
      extra;
  return options;
}

std::unique_ptr<DqdProcess> start_host(const DqdOptions& options) {
  auto host = std::make_unique<DqdProcess>(options);
  std::ofstream(host->dir() + "/admin-password") << kPassword << "\n";
  host->start();
  return host;
}

std::string new_token(const DqdProcess& host, std::vector<std::string> args) {
  args.insert(args.begin(), {"-c", host.config_path(), "token", "add"});
  RunResult made = run_dqctl(args, host.dir());
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  return made.out.substr(0, made.out.find('\n'));
}

// dqctl --url against the host, from a folder with no config in it.
struct RemoteCtl {
  const DqdProcess& host;
  std::string token;
  std::string folder;

  RemoteCtl(const DqdProcess& dqd, std::string with_token)
      : host(dqd), token(std::move(with_token)), folder(dqd.dir() + "/elsewhere") {
    std::filesystem::create_directories(folder);
  }
  RunResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--url", host.base_url(), "--token", token});
    return run_dqctl(args, folder, "", folder);
  }
};

HttpResult with_token(const std::string& token, const std::string& method, const std::string& url,
                      const std::string& body = "", std::vector<std::string> headers = {}) {
  HttpClient http;
  http.add_header("Authorization: Bearer " + token);
  return http.request(method, url, body, 10000, headers);
}

}  // namespace

TEST_CASE("dqctl --url manages a remote host's topics; a topic made over HTTP delivers") {
  TestRedis redis;
  CallbackServer receiver;
  auto host = start_host(host_options({redis.address()}));
  RemoteCtl admin(*host, new_token(*host, {"ops", "--topics", "*", "--admin"}));
  RemoteCtl producer(*host, new_token(*host, {"shop", "--topics", "*"}));

  RunResult added = admin.run({"topic", "add", "remote", "--callback", receiver.url("/remote"),
                               "--max-attempts", "3", "--signing-secret", "generate"});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  CHECK(contains(added.out, "topic remote added"));
  CHECK(contains(added.out, "signing secret (shown this once"));
  CHECK(contains(added.out, "whsec_"));
  RunResult shown = admin.run({"--json", "topic", "show", "remote"});
  REQUIRE_MESSAGE(shown.exit_code == 0, shown.err);
  Json topic = Json::parse(shown.out);
  CHECK(topic["max_attempts"] == 3);
  CHECK(contains(topic["signing_secret"].get<std::string>(), "..."));  // masked when read

  RunResult again = admin.run({"topic", "add", "remote", "--callback", receiver.url("/other")});
  CHECK(again.exit_code == 1);
  CHECK(contains(again.err, "(409)"));
  CHECK(contains(again.err, "already exists"));
  RunResult bad = admin.run({"topic", "set", "remote", "--timeout-ms", "0"});
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.err, "timeout_ms: 0 must be from 1 to 600000"));
  CHECK(admin.run({"topic", "set", "remote", "--priority", "1"}).exit_code == 0);
  CHECK(admin.run({"topic", "offline", "remote"}).exit_code == 0);
  CHECK(Json::parse(admin.run({"--json", "topic", "show", "remote"}).out)["online"] == false);
  RunResult not_admin = producer.run({"topic", "set", "remote", "--priority", "3"});
  CHECK(not_admin.exit_code == 1);
  CHECK(contains(not_admin.err, "(403)"));
  CHECK(admin.run({"topic", "online", "remote"}).exit_code == 0);
  CHECK(contains(admin.run({"topic", "list"}).out, "remote"));
  // Nothing of that came from a config or database beside dqctl.
  CHECK_FALSE(std::filesystem::exists(admin.folder + "/conf"));
  CHECK_FALSE(std::filesystem::exists(admin.folder + "/var"));

  // The topic made over HTTP delivers; the job commands take --url too.
  RunResult job = producer.run({"add", "remote", "j1", R"({"n":1})", "--delay", "0"});
  REQUIRE_MESSAGE(job.exit_code == 0, job.err);
  REQUIRE(receiver.wait_for(1, kGenerousMs));
  CHECK(receiver.requests()[0].header("x-dq-id") == "j1");
  CHECK(contains(receiver.requests()[0].header("webhook-signature"), "v1,"));

  CHECK(producer.run({"add", "remote", "j2", "2", "--delay", "3600"}).exit_code == 0);
  RunResult holds = admin.run({"topic", "del", "remote"});
  CHECK(holds.exit_code == 1);
  CHECK(contains(holds.err, "still holds 1 job(s)"));
  RunResult purged = admin.run({"--json", "topic", "del", "remote", "--purge"});
  REQUIRE_MESSAGE(purged.exit_code == 0, purged.err);
  CHECK(Json::parse(purged.out)["purged_jobs"] == 1);
  RunResult gone = admin.run({"topic", "show", "remote"});
  CHECK(gone.exit_code == 1);
  CHECK(contains(gone.err, "(404)"));
  CHECK(receiver.count() == 1);  // j2 was purged, never delivered
}

TEST_CASE("dqctl, the admin page and the HTTP API refuse a bad value with the same words") {
  TestRedis redis;
  auto host = start_host(host_options({redis.address()}));
  std::string token = new_token(*host, {"ops", "--topics", "*", "--admin"});
  RunResult made = run_dqctl(
      {"-c", host->config_path(), "topic", "add", "t", "--callback", "http://127.0.0.1:9/cb"},
      host->dir());
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  AdminClient page(host->admin_url());
  REQUIRE(page.login("admin", kPassword).status == 200);

  struct Case {
    Json fields;
    std::vector<std::string> flags;
    std::string words;
  };
  std::vector<Case> cases = {
      {Json{{"priority", 7}}, {"--priority", "7"}, "priority: 7 must be 1, 2 or 3"},
      {Json{{"method", "put"}}, {"--method", "put"}, "method: 'PUT' must be POST or GET"},
      {Json{{"circuit_breaker", false}, {"circuit_failures", 0}},
       {"--circuit-breaker", "off", "--circuit-failures", "0"},
       "circuit_failures: 0 must be from 1 to 1000"},
      {Json{{"max_retry_duration_s", -5}},
       {"--max-retry-duration-s", "-5"},
       "max_retry_duration_s: -5 must be from 0 (no limit) to 31536000 (365 days)"},
      {Json{{"delivery_window", "Mon-Fry 09:00-18:00"}},
       {"--delivery-window", "Mon-Fry 09:00-18:00"},
       "delivery_window: "},
      {Json{{"callback_url", "http://169.254.169.254/x"}},
       {"--callback", "http://169.254.169.254/x"},
       "callback_url: "},
  };
  for (const Case& c : cases) {
    INFO(c.words);
    std::vector<std::string> args = {"-c", host->config_path(), "topic", "set", "t"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    RunResult ctl = run_dqctl(args, host->dir());
    CHECK(ctl.exit_code == 1);
    HttpResult api = with_token(token, "PATCH", host->base_url() + "/v1/topics/t", c.fields.dump());
    CHECK(api.status == 400);
    AdminAnswer admin = page.call("PUT", "/api/topics/t", c.fields.dump());
    CHECK(admin.status == 400);
    std::string said = api.json().value("error", "");
    CHECK(contains(said, c.words));
    CHECK(ctl.err == "dqctl: " + said + "\n");
    CHECK(admin.json()["error"] == said);
    CHECK(admin.json()["field"] == api.json()["field"]);
  }
  // And nothing changed.
  HttpResult read = with_token(token, "GET", host->base_url() + "/v1/topics/t");
  CHECK(read.json()["priority"] == 2);
  CHECK(read.json()["version"] == 1);
}

TEST_CASE("two hosts sharing the registry serve each other's topic writes over HTTP") {
  TestRedis registry_shard;
  TestRedis other_shard;
  CallbackServer receiver;
  std::vector<std::string> shards = {registry_shard.address(), other_shard.address()};
  DqdOptions options = host_options(shards, "[registry]\nshared = yes\n");
  auto a = start_host(options);
  auto b = start_host(options);
  std::string token = new_token(*a, {"ops", "--topics", "*", "--admin"});
  // The token reaches B through the shared registry.
  REQUIRE(wait_until(kGenerousMs, [&] {
    return with_token(token, "GET", b->base_url() + "/v1/topics").status == 200;
  }));

  std::string fields = Json{{"callback_url", receiver.url("/shared")}}.dump();
  HttpResult created = with_token(token, "PUT", a->base_url() + "/v1/topics/shared-t", fields);
  REQUIRE_MESSAGE(created.status == 201, created.body);
  int64_t version = created.json()["version"];
  HttpResult on_b;
  REQUIRE(wait_until(kGenerousMs, [&] {
    on_b = with_token(token, "GET", b->base_url() + "/v1/topics/shared-t");
    return on_b.status == 200;
  }));
  CHECK(on_b.json()["version"] == version);
  CHECK(on_b.headers["etag"] == "\"" + std::to_string(version) + "\"");

  // An edit on B at the version read; the same version then refused on A,
  // whether or not A's copy has pulled B's edit yet.
  std::string if_match = "If-Match: \"" + std::to_string(version) + "\"";
  HttpResult edited = with_token(token, "PATCH", b->base_url() + "/v1/topics/shared-t",
                                 R"({"max_attempts": 9})", {if_match});
  REQUIRE_MESSAGE(edited.status == 200, edited.body);
  CHECK(edited.json()["version"] == version + 1);
  HttpResult stale = with_token(token, "PATCH", a->base_url() + "/v1/topics/shared-t",
                                R"({"max_attempts": 2})", {if_match});
  CHECK(stale.status == 409);
  REQUIRE(wait_until(kGenerousMs, [&] {
    return with_token(token, "GET", a->base_url() + "/v1/topics/shared-t").json()["max_attempts"] ==
           9;
  }));

  // Jobs added on A are delivered; a delete on B removes the topic on A too.
  HttpResult job = with_token(token, "POST", a->jobs_url("shared-t"), job_doc("s1", 1, 0));
  CHECK(job.status == 201);
  CHECK(receiver.wait_for(1, kGenerousMs));
  // The job's ack follows the callback's answer: until it lands the topic
  // still holds the job, and a delete is refused (409, nothing deleted).
  HttpResult deleted;
  CHECK(wait_until(kGenerousMs, [&] {
    deleted = with_token(token, "DELETE", b->base_url() + "/v1/topics/shared-t");
    return deleted.status != 409 || deleted.body.find("still holds") == std::string::npos;
  }));
  CHECK_MESSAGE(deleted.status == 200, deleted.body);
  CHECK(wait_until(kGenerousMs, [&] {
    return with_token(token, "GET", a->base_url() + "/v1/topics/shared-t").status == 404;
  }));
}

// A topic's schedules from where the registry is not: libdqclient's
// list/add/pause/delete_schedule and `dqctl --url ... schedule`, against a
// real dqd whose HTTP API writes the shared registry (docs/schedules.md).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/core/json.h"
#include "dq/client.h"
#include "tests/support/callback_server.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using namespace dq::test;
namespace dc = dq::client;

namespace {

RunResult local_dqctl(const DqdProcess& host, std::vector<std::string> args) {
  args.insert(args.begin(), {"-c", host.config_path()});
  return run_dqctl(args, host.dir());
}

// dqctl as an operator on another machine runs it: the URL, no config.
RunResult remote_dqctl(const DqdProcess& host, std::vector<std::string> args) {
  args.insert(args.begin(), {"--url", host.base_url(), "-c", "/nonexistent/dq.ini"});
  return run_dqctl(args, host.dir());
}

struct Host {
  TestRedis redis;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
  Host() {
    DqdOptions options = one_timer_one_consumer({redis.address()});
    options.consumers = 0;  // the ticks' jobs stay where they are
    dqd = std::make_unique<DqdProcess>(options);
    dqd->start();
    RunResult added = local_dqctl(*dqd, {"topic", "add", "reports", "--callback", callback.url()});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  }
  dc::Options client_options() const {
    dc::Options options;
    options.servers = {"127.0.0.1:" + std::to_string(dqd->http_port())};
    return options;
  }
};

}  // namespace

TEST_CASE("libdqclient: add, list, pause, resume and delete a schedule; refusals typed") {
  Host host;
  dc::Client client(host.client_options());

  auto added = client.add_schedule(
      "reports", R"({"spec": "30 2 * * *", "tz": "Europe/Paris", "catch_up": "none",
                     "body": {"kind": "nightly", "tick": "{{tick}}"}})");
  REQUIRE_MESSAGE(added.ok(), added.error().message);
  CHECK(added->spec == "30 2 * * *");
  CHECK(added->id.rfind("sch_", 0) == 0);
  CHECK_FALSE(added->paused);
  Json shown = Json::parse(added->json);
  CHECK(shown["zone"] == "Europe/Paris");
  CHECK(shown["body"]["kind"] == "nightly");
  CHECK(shown["next_runs"].size() == 5);

  // Refusals: the server's 409, 400 and 404, and a request refused before sending.
  auto twice = client.add_schedule("reports", R"({"spec": "30 2 * * *"})");
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().code == dc::ErrorCode::Conflict);
  auto bad = client.add_schedule("reports", R"({"spec": "61 * * * *"})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == dc::ErrorCode::InvalidArgument);
  CHECK(bad.error().message.find("spec") != std::string::npos);
  auto ghost = client.add_schedule("ghost", R"({"spec": "@hourly"})");
  REQUIRE_FALSE(ghost.ok());
  CHECK(ghost.error().code == dc::ErrorCode::NotFound);
  auto no_spec = client.add_schedule("reports", R"({"tz": "UTC"})");
  REQUIRE_FALSE(no_spec.ok());
  CHECK(no_spec.error().code == dc::ErrorCode::InvalidArgument);
  CHECK(no_spec.error().http_status == 0);  // not sent

  auto listed = client.list_schedules("reports");
  REQUIRE_MESSAGE(listed.ok(), listed.error().message);
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().id == added->id);
  CHECK(client.list_schedules("ghost").error().code == dc::ErrorCode::NotFound);

  auto paused = client.pause_schedule("reports", "30 2 * * *", true);
  REQUIRE_MESSAGE(paused.ok(), paused.error().message);
  CHECK(paused->paused);
  CHECK(Json::parse(paused->json)["next_runs"].empty());
  auto resumed = client.pause_schedule("reports", "30 2 * * *", false);
  REQUIRE(resumed.ok());
  CHECK_FALSE(resumed->paused);
  CHECK(client.pause_schedule("reports", "0 0 * * *", true).error().code ==
        dc::ErrorCode::NotFound);

  // The host's registry has what the client wrote.
  RunResult local = local_dqctl(*host.dqd, {"--json", "schedule", "list", "reports"});
  REQUIRE_MESSAGE(local.exit_code == 0, local.err);
  CHECK(Json::parse(local.out)["schedules"][0]["id"] == added->id);

  auto deleted = client.delete_schedule("reports", "30 2 * * *");
  REQUIRE_MESSAGE(deleted.ok(), deleted.error().message);
  CHECK(*deleted == added->id);
  CHECK(client.list_schedules("reports")->empty());
  CHECK(client.delete_schedule("reports", "30 2 * * *").error().code == dc::ErrorCode::NotFound);
}

TEST_CASE("libdqclient: a write whose answer was lost is not reported as a conflict or 404") {
  Host host;
  // The first server is the host behind a proxy that delays each way by
  // 1 s: a request reaches dqd (and is applied) well before the client's
  // 1.7 s timeout, its answer (2 s) would not; the client then asks the
  // host directly, which has it already.
  DelayProxy slow(host.dqd->http_port(), 1000);
  dc::Options options;
  options.servers = {slow.address(), "127.0.0.1:" + std::to_string(host.dqd->http_port())};
  options.timeout_ms = 1700;
  options.retries = 0;

  dc::Client first(options);
  auto added = first.add_schedule("reports", R"({"spec": "@every 1h"})");
  REQUIRE_MESSAGE(added.ok(), added.error().message);
  CHECK(added->spec == "@every 1h");
  CHECK(added->id.rfind("sch_", 0) == 0);
  dc::Client direct(host.client_options());
  REQUIRE(direct.list_schedules("reports")->size() == 1);
  CHECK(direct.list_schedules("reports")->front().id == added->id);

  dc::Client second(options);
  auto deleted = second.delete_schedule("reports", "@every 1h");
  REQUIRE_MESSAGE(deleted.ok(), deleted.error().message);
  CHECK(deleted->empty());  // deleted by the attempt whose answer was lost
  CHECK(direct.list_schedules("reports")->empty());

  // Without a lost answer, a conflict and a missing spec stay errors.
  REQUIRE(direct.add_schedule("reports", R"({"spec": "@daily"})").ok());
  CHECK(direct.add_schedule("reports", R"({"spec": "@daily"})").error().code ==
        dc::ErrorCode::Conflict);
  CHECK(direct.delete_schedule("reports", "@hourly").error().code == dc::ErrorCode::NotFound);
}

TEST_CASE("dqctl --url schedule: the same commands over HTTP, the same output") {
  Host host;
  RunResult every = remote_dqctl(*host.dqd, {"schedule", "add", "reports", "@every 10s", "--body",
                                             R"({"ms": {{tick_ms}}})", "--catch-up", "one"});
  REQUIRE_MESSAGE(every.exit_code == 0, every.err);
  CHECK(every.out == "schedule '@every 10s' of topic reports added\n");

  RunResult listed = remote_dqctl(*host.dqd, {"--json", "schedule", "list", "reports"});
  REQUIRE_MESSAGE(listed.exit_code == 0, listed.err);
  Json schedules = Json::parse(listed.out)["schedules"];
  REQUIRE(schedules.size() == 1);
  CHECK(schedules[0]["spec"] == "@every 10s");
  CHECK(schedules[0]["catch_up"] == "one");
  RunResult table = remote_dqctl(*host.dqd, {"schedule", "list", "reports"});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("@every 10s") != std::string::npos);
  CHECK(table.out.find("active") != std::string::npos);
  CHECK(table.out.find("{{tick_ms}}") != std::string::npos);

  RunResult paused = remote_dqctl(*host.dqd, {"schedule", "pause", "reports", "@every 10s"});
  REQUIRE_MESSAGE(paused.exit_code == 0, paused.err);
  CHECK(paused.out == "schedule '@every 10s' of topic reports paused\n");
  CHECK(remote_dqctl(*host.dqd, {"schedule", "list", "reports"}).out.find("paused") !=
        std::string::npos);
  // Paused, it lists no runs: the local table is the remote one, line for line.
  RunResult local_table = local_dqctl(*host.dqd, {"schedule", "list", "reports"});
  REQUIRE_MESSAGE(local_table.exit_code == 0, local_table.err);
  CHECK(local_table.out == remote_dqctl(*host.dqd, {"schedule", "list", "reports"}).out);
  CHECK(remote_dqctl(*host.dqd, {"schedule", "resume", "reports", "@every 10s"}).exit_code == 0);

  // Refused by the server: exit 1, the reason on stderr; nothing written.
  RunResult wrong =
      remote_dqctl(*host.dqd, {"schedule", "add", "reports", "@every 2s", "--catch-up", "both"});
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.err.find("catch_up") != std::string::npos);
  RunResult ghost = remote_dqctl(*host.dqd, {"schedule", "list", "ghost"});
  CHECK(ghost.exit_code == 1);
  // Usage errors before anything is sent: exit 2.
  CHECK(remote_dqctl(*host.dqd, {"schedule", "add", "reports"}).exit_code == 2);

  RunResult deleted =
      remote_dqctl(*host.dqd, {"--json", "schedule", "del", "reports", "@every 10s"});
  REQUIRE_MESSAGE(deleted.exit_code == 0, deleted.err);
  CHECK(Json::parse(deleted.out)["deleted"] == "@every 10s");
  CHECK(Json::parse(
            remote_dqctl(*host.dqd, {"--json", "schedule", "list", "reports"}).out)["schedules"]
            .empty());
  RunResult local = local_dqctl(*host.dqd, {"--json", "schedule", "list", "reports"});
  REQUIRE(local.exit_code == 0);
  CHECK(Json::parse(local.out)["schedules"].empty());

  // No server: exit 3.
  RunResult down =
      run_dqctl({"--url", "http://127.0.0.1:9", "schedule", "list", "reports"}, host.dqd->dir());
  CHECK(down.exit_code == 3);
}

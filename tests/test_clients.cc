// The official thin clients (clients/python: module dqclient; clients/node:
// package dq-client) against a real dqd on a real redis-server, with
// [server] require_token = yes: each client's own test suite adds, gets and
// deletes jobs, adds a batch, lists, reads, creates, edits and deletes
// topics, and verifies a real signed callback from dqd (HMAC and Ed25519)
// while refusing a tampered one. Python is Debian's python3 with the
// standard library only; Node needs no package.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/support/dqd_process.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;

namespace {

// A dqd that delivers (one timer, one consumer) and requires tokens, with an
// admin token and a producer token (every topic, no admin scope).
struct ClientWorld {
  TestRedis redis;
  DqdProcess dqd;
  std::string admin_token;
  std::string producer_token;

  ClientWorld() : dqd(options(redis)) {
    dqd.start();
    admin_token = token({"admin", "--topics", "*", "--admin"});
    producer_token = token({"producer", "--topics", "*"});
  }
  static DqdOptions options(TestRedis& redis) {
    DqdOptions options;
    options.shards = {redis.address()};
    options.timers = 1;
    options.consumers = 1;
    options.extra_ini = "[server]\nrequire_token = yes\n";
    return options;
  }
  std::string token(std::vector<std::string> args) {
    args.insert(args.begin(), {"-c", dqd.config_path(), "token", "add"});
    RunResult made = run_dqctl(args, dqd.dir());
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    return made.out.substr(0, made.out.find('\n'));
  }
  // Runs a client's suite with the dqd's URL and tokens in its environment.
  RunResult run_suite(const std::string& folder, std::vector<std::string> command) {
    std::vector<std::string> argv = {"/usr/bin/env", "DQ_URL=" + dqd.base_url(),
                                     "DQ_TOKEN=" + producer_token, "DQ_ADMIN_TOKEN=" + admin_token};
    argv.insert(argv.end(), command.begin(), command.end());
    return run_program(argv, dqd.dir(), "", std::string(DQ_SOURCE_DIR) + "/clients/" + folder);
  }
};

}  // namespace

TEST_CASE("the Python client (dqclient) against a real dqd") {
  ClientWorld world;
  RunResult run = world.run_suite("python", {"/usr/bin/python3", "-m", "unittest", "-v"});
  INFO(run.out, run.err);
  CHECK(run.exit_code == 0);
  // unittest reports on stderr: every case ran (the six against dqd
  // among them: a pull worker, a job after another, schedules), none skipped.
  CHECK(contains(run.err, "test_a_real_signed_callback_verifies_and_a_tampered_one_does_not"));
  CHECK(contains(run.err, "test_a_pull_worker_reserves_acks_nacks_and_touches"));
  CHECK(contains(run.err, "test_a_job_after_another_waits_for_it"));
  CHECK(contains(run.err, "test_schedules_add_list_pause_resume_delete"));
  CHECK(contains(run.err, "\nRan 11 tests"));
  CHECK(contains(run.err, "\nOK\n"));
  CHECK_FALSE(contains(run.err, "skipped"));
}

TEST_CASE("the Node client (dq-client) against a real dqd") {
  ClientWorld world;
  RunResult run = world.run_suite("node", {"node", "--test", "test/"});
  INFO(run.out, run.err);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.out, "# skipped 0"));
  CHECK(contains(run.out, "# fail 0"));
  CHECK(contains(run.out, "ok 5 - schedules: add, list, pause, resume, delete"));
  CHECK(contains(run.out, "ok 6 - a real signed callback verifies, a tampered one does not"));
  CHECK(contains(run.out, "ok 1 - a pull worker reserves, acks, nacks and touches"));
  CHECK(contains(run.out, "ok 2 - a job after another waits for it"));
}

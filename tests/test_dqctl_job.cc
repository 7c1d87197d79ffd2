// Runs the built dqctl binary's job commands (add, get, del, add --batch)
// against a real dqd and checks output, --json output and exit codes.
#include <doctest/doctest.h>

#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "tests/support/run_program.h"
#include "tests/support/shared_dqd.h"

using dq::Json;
using dq::test::contains;
using dq::test::RunResult;
using dq::test::SharedDqd;

namespace {

SharedDqd& env() {
  static SharedDqd instance({}, {{"orders"}});
  return instance;
}

// Runs build/dqctl with args; stdin_text is fed on its standard input.
RunResult dqctl(const std::vector<std::string>& args, const std::string& stdin_text = "") {
  return dq::test::run_dqctl(args, env().dqd->dir(), stdin_text);
}

std::vector<Json> json_lines(const std::string& text) {
  std::vector<Json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(Json::parse(line, nullptr, false));
  }
  return lines;
}

}  // namespace

TEST_CASE("add, get, del: output and exit codes") {
  std::string s = env().server();
  RunResult added = dqctl({"-s", s, "add", "orders", "ctl-1", R"({"a":1})", "--delay", "600"});
  CHECK_MESSAGE(added.exit_code == 0, added.err);
  CHECK(contains(added.out, "added orders/ctl-1, due "));

  RunResult got = dqctl({"-s", s, "get", "orders", "ctl-1"});
  CHECK(got.exit_code == 0);
  CHECK(contains(got.out, "state:    delayed"));
  CHECK(contains(got.out, R"(body:     {"a":1})"));

  RunResult got_json = dqctl({"-s", s, "--json", "get", "orders", "ctl-1"});
  CHECK(got_json.exit_code == 0);
  Json job = Json::parse(got_json.out, nullptr, false);
  REQUIRE(job.is_object());
  CHECK(job["body"] == Json{{"a", 1}});
  CHECK(job["state"] == "delayed");

  RunResult duplicate = dqctl({"-s", s, "add", "orders", "ctl-1", "1"});
  CHECK(duplicate.exit_code == 1);
  CHECK(contains(duplicate.err, "Conflict (409)"));

  // run: due at once, attempts kept; --json prints the server's fields.
  RunResult ran = dqctl({"-s", s, "--json", "run", "orders", "ctl-1"});
  CHECK_MESSAGE(ran.exit_code == 0, ran.err);
  Json run_answer = Json::parse(ran.out, nullptr, false);
  REQUIRE(run_answer.is_object());
  CHECK(run_answer["moved"] == true);
  CHECK(run_answer["state"] == "delayed");
  RunResult ran_missing = dqctl({"-s", s, "run", "orders", "ctl-none"});
  CHECK(ran_missing.exit_code == 1);
  CHECK(contains(ran_missing.err, "NotFound (404)"));
  CHECK(dqctl({"-s", s, "run", "orders"}).exit_code == 2);

  // add in a zone with a ttl; update the expiry alone.
  RunResult zoned = dqctl({"-s", s, "add", "orders", "ctl-zone", "1", "--at", "2036-07-01 09:00",
                           "--tz", "Asia/Shanghai", "--ttl", "30"});
  CHECK_MESSAGE(zoned.exit_code == 0, zoned.err);
  Json zoned_job = Json::parse(dqctl({"-s", s, "--json", "get", "orders", "ctl-zone"}).out);
  CHECK(zoned_job["due_at_ms"] == int64_t{2098486800000});
  CHECK(zoned_job["expires_at_ms"] == int64_t{2098486830000});
  RunResult expiry_moved = dqctl({"-s", s, "update", "orders", "ctl-zone", "--expire-at",
                                  "2036-07-02 09:00", "--tz", "Asia/Shanghai"});
  CHECK_MESSAGE(expiry_moved.exit_code == 0, expiry_moved.err);
  CHECK(Json::parse(dqctl({"-s", s, "--json", "get", "orders", "ctl-zone"}).out)["expires_at_ms"] ==
        int64_t{2098573200000});
  CHECK(dqctl({"-s", s, "add", "orders", "ctl-x", "1", "--ttl", "soon"}).exit_code == 2);

  // update: in place, what is not given kept; no such job: added.
  REQUIRE(dqctl({"-s", s, "add", "orders", "ctl-upd", "1", "--delay", "600"}).exit_code == 0);
  RunResult updated =
      dqctl({"-s", s, "update", "orders", "ctl-upd", "--body", "{\"n\":7}", "--delay", "3600"});
  CHECK_MESSAGE(updated.exit_code == 0, updated.err);
  CHECK(contains(updated.out, "updated orders/ctl-upd (delayed)"));
  RunResult got_updated = dqctl({"-s", s, "--json", "get", "orders", "ctl-upd"});
  CHECK(Json::parse(got_updated.out, nullptr, false)["body"] == Json{{"n", 7}});
  RunResult updated_json = dqctl({"-s", s, "--json", "update", "orders", "ctl-upd", "--at",
                                  std::to_string(time(nullptr) + 7200)});
  CHECK_MESSAGE(updated_json.exit_code == 0, updated_json.err);
  Json update_answer = Json::parse(updated_json.out, nullptr, false);
  CHECK(update_answer["updated"] == true);
  CHECK(update_answer["previous_state"] == "delayed");
  RunResult update_added =
      dqctl({"-s", s, "update", "orders", "ctl-new", "--body", "1", "--delay", "600"});
  CHECK_MESSAGE(update_added.exit_code == 0, update_added.err);
  CHECK(contains(update_added.out, "added orders/ctl-new"));
  CHECK(dqctl({"-s", s, "update", "orders", "ctl-upd"}).exit_code == 2);
  CHECK(dqctl({"-s", s, "update", "orders", "ctl-upd", "--body", "{bad"}).exit_code == 2);
  RunResult update_bodiless = dqctl({"-s", s, "update", "orders", "ctl-none", "--delay", "5"});
  CHECK(update_bodiless.exit_code == 1);
  CHECK(contains(update_bodiless.err, "(400)"));
  CHECK(dqctl({"-s", s, "del", "orders", "ctl-upd"}).exit_code == 0);
  CHECK(dqctl({"-s", s, "del", "orders", "ctl-new"}).exit_code == 0);

  RunResult deleted = dqctl({"-s", s, "del", "orders", "ctl-1"});
  CHECK(deleted.exit_code == 0);
  CHECK(contains(deleted.out, "deleted orders/ctl-1"));

  // A delete is not remembered: the same add again schedules the job anew.
  RunResult readded = dqctl({"-s", s, "add", "orders", "ctl-1", R"({"a":1})", "--delay", "600"});
  CHECK_MESSAGE(readded.exit_code == 0, readded.err);
  CHECK(contains(readded.out, "added orders/ctl-1, due "));
  CHECK(dqctl({"-s", s, "del", "orders", "ctl-1"}).exit_code == 0);

  RunResult missing = dqctl({"-s", s, "get", "orders", "ctl-1"});
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.err, "NotFound (404)"));
  CHECK(missing.out.empty());

  RunResult missing_json = dqctl({"-s", s, "del", "orders", "ctl-1", "--json"});
  CHECK(missing_json.exit_code == 1);
  Json error = Json::parse(missing_json.out, nullptr, false);
  REQUIRE(error.is_object());
  CHECK(error["code"] == "NotFound");
  CHECK(error["http_status"] == 404);

  RunResult unknown_topic = dqctl({"-s", s, "add", "nope", "x", "1"});
  CHECK(unknown_topic.exit_code == 1);
  CHECK(contains(unknown_topic.err, "unknown topic"));
}

TEST_CASE("add --at and --json print the server's answer") {
  int64_t at = dq::now_ms() / 1000 + 3600;
  RunResult added = dqctl({"-s", env().server(), "--json", "add", "orders", "ctl-at", R"("text")",
                           "--at", std::to_string(at)});
  CHECK(added.exit_code == 0);
  Json answer = Json::parse(added.out, nullptr, false);
  REQUIRE(answer.is_object());
  CHECK(answer["due_at_ms"] == at * 1000);
  CHECK(answer["id"] == "ctl-at");

  RunResult bad_time =
      dqctl({"-s", env().server(), "add", "orders", "ctl-at2", "1", "--at", "2026-13-01 00:00:00"});
  CHECK(bad_time.exit_code == 1);
  CHECK(contains(bad_time.err, "InvalidArgument (400)"));
}

TEST_CASE("usage errors exit 2; an unreachable service exits 3; a dead first server fails over") {
  std::string s = env().server();
  RunResult not_json = dqctl({"-s", s, "add", "orders", "x", "plain text"});
  CHECK(not_json.exit_code == 2);
  CHECK(contains(not_json.err, "BODY must be JSON"));
  CHECK(dqctl({"-s", s, "add", "orders", "x"}).exit_code == 2);
  CHECK(dqctl({"-s", s, "add", "orders", "x", "1", "--delay", "1", "--at", "1"}).exit_code == 2);
  CHECK(dqctl({"-s", s, "add", "orders", "x", "1", "--delay", "soon"}).exit_code == 2);
  CHECK(dqctl({"-s", s, "get", "orders"}).exit_code == 2);
  CHECK(dqctl({"-s", s, "del", "orders", "x", "--frobnicate"}).exit_code == 2);

  std::string dead = "127.0.0.1:" + std::to_string(dq::test::free_port());
  RunResult unreachable = dqctl({"-s", dead, "get", "orders", "x"});
  CHECK(unreachable.exit_code == 3);
  CHECK(contains(unreachable.err, "Unavailable"));

  RunResult failover = dqctl({"-s", dead + "," + s, "add", "orders", "ctl-fo", "1"});
  CHECK_MESSAGE(failover.exit_code == 0, failover.err);
}

TEST_CASE("-s and --json are accepted after the command too") {
  std::string s = env().server();
  RunResult added = dqctl({"add", "orders", "ctl-after", "7", "--delay", "600", "-s", s});
  CHECK_MESSAGE(added.exit_code == 0, added.err);
  CHECK(contains(added.out, "added orders/ctl-after, due "));

  RunResult got = dqctl({"get", "orders", "ctl-after", "--json", "--server=" + s});
  CHECK_MESSAGE(got.exit_code == 0, got.err);
  Json job = Json::parse(got.out, nullptr, false);
  REQUIRE(job.is_object());
  CHECK(job["body"] == 7);

  // Without the -s after the command, dqctl would try the default server.
  std::string dead = "127.0.0.1:" + std::to_string(dq::test::free_port());
  RunResult failover = dqctl({"-s", dead, "get", "orders", "ctl-after", "-s", s});
  CHECK_MESSAGE(failover.exit_code == 0, failover.err);
  CHECK(contains(failover.out, "state:    delayed"));

  RunResult deleted = dqctl({"del", "--json", "orders", "ctl-after", "-s", s});
  CHECK_MESSAGE(deleted.exit_code == 0, deleted.err);
  CHECK(Json::parse(deleted.out, nullptr, false)["deleted"] == true);
  CHECK(dqctl({"get", "orders", "ctl-after", "-s"}).exit_code == 2);  // -s needs a value
}

TEST_CASE("add --batch: JSON lines from a file or stdin, one result per line") {
  std::string file = env().dqd->dir() + "/jobs.jsonl";
  std::ofstream(file) << R"({"id":"b-1","body":{"n":1},"delay":60})"
                      << "\n"
                      << "\n"
                      << R"(not json)"
                      << "\n"
                      << R"({"id":"b-2","body":"two","at":"2030-01-01 00:00:00"})"
                      << "\n"
                      << R"({"id":"b-1","body":1})"
                      << "\n"
                      << R"({"id":"b-3","body":[3],"topic":"orders"})"
                      << "\n";
  RunResult batch = dqctl({"-s", env().server(), "add", "orders", "--batch", file});
  CHECK(batch.exit_code == 1);  // two lines failed
  CHECK(contains(batch.out, "line 1 orders/b-1: added"));
  CHECK(contains(batch.out, "line 3 orders/: failed: InvalidArgument"));
  CHECK(contains(batch.out, "line 4 orders/b-2: added"));
  CHECK(contains(batch.out, "line 5 orders/b-1: failed: Conflict (409)"));
  CHECK(contains(batch.out, "line 6 orders/b-3: added"));
  CHECK(contains(batch.err, "3 jobs added, 2 failed"));
  CHECK(dqctl({"-s", env().server(), "get", "orders", "b-3"}).exit_code == 0);

  std::string input = R"({"id":"s-1","body":1,"topic":"orders"})"
                      "\n"
                      R"({"id":"s-2","body":2,"topic":"orders"})"
                      "\n";
  RunResult from_stdin = dqctl({"-s", env().server(), "--json", "add", "--batch", "-"}, input);
  CHECK_MESSAGE(from_stdin.exit_code == 0, from_stdin.err);
  auto lines = json_lines(from_stdin.out);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["id"] == "s-1");
  CHECK(lines[0]["status"] == 201);
  CHECK(lines[0]["due_at_ms"].is_number_integer());
  CHECK(lines[1]["line"] == 2);

  RunResult no_topic = dqctl({"-s", env().server(), "add", "--batch", "-"}, R"({"id":"x","body":1})"
                                                                            "\n");
  CHECK(no_topic.exit_code == 1);
  CHECK(contains(no_topic.out, "no topic"));
  CHECK(dqctl({"-s", env().server(), "add", "orders", "--batch", "/nonexistent/file"}).exit_code ==
        2);
}

// The command lines a new operator meets first: every dqctl
// command and subcommand answers --help with its usage and exit 0; dqd
// --version, --help and --check; an unknown topic is an error wherever one is
// named; [log] format = json and keep_days.
#include <doctest/doctest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/core/json.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::test::contains;
using dq::test::RunResult;

namespace {

struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/dq-cli-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

RunResult dqd(const std::vector<std::string>& args, const std::string& scratch) {
  std::vector<std::string> argv = {std::string(DQ_BUILD_DIR) + "/dqd"};
  argv.insert(argv.end(), args.begin(), args.end());
  return dq::test::run_program(argv, scratch);
}

std::string write_config(const std::string& dir, const std::string& shards) {
  std::string path = dir + "/dq.ini";
  std::ofstream(path) << "[redis]\nshards = " << shards
                      << "\nstart_local = no\nconnect_timeout_ms = 300\n"
                      << "[sqlite]\npath = dq.db\n[log]\ndir = log\n";
  return path;
}

// "topic", "topic add", ... from the command list of `dqctl --help`.
std::set<std::string> commands_in_help(const std::string& help) {
  std::set<std::string> found;
  std::istringstream lines(help.substr(help.find("commands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && !line.empty()) {
    if (line.size() < 3 || line[0] != ' ' || line[2] == ' ') {
      continue;  // continuation
    }
    std::istringstream words(line);
    std::string command, sub;
    words >> command >> sub;
    found.insert(command);
    // "topic add NAME": one space before a lower-case word. "status   text"
    // (several spaces) is a description, "add TOPIC" a placeholder.
    size_t after = 2 + command.size();
    bool one_space = line.size() > after + 1 && line[after] == ' ' && line[after + 1] != ' ';
    bool is_word = one_space && !sub.empty() && std::all_of(sub.begin(), sub.end(), [](char c) {
                     return (c >= 'a' && c <= 'z') || c == '-';
                   });
    if (is_word && sub[0] != '-') {
      std::string pair = command + " ";
      pair += sub;
      found.insert(pair);
    }
  }
  return found;
}

}  // namespace

TEST_CASE("every dqctl command and subcommand answers --help with its usage, exit 0") {
  TempDir dir;
  RunResult help = dq::test::run_dqctl({"--help"}, dir.path);
  REQUIRE(help.exit_code == 0);
  auto commands = commands_in_help(help.out);
  // The ones that exist today at least; new ones are found in the help.
  for (const char* expected : {"topic", "topic add", "topic list", "topic del", "dead", "dead list",
                               "dead requeue", "add", "get", "del", "status", "alert"}) {
    CAPTURE(expected);
    CHECK(commands.count(expected) == 1);
  }
  for (const auto& command : commands) {
    CAPTURE(command);
    std::vector<std::string> args;
    std::istringstream words(command);
    for (std::string word; words >> word;) {
      args.push_back(word);
    }
    args.push_back("--help");
    RunResult answer = dq::test::run_dqctl(args, dir.path);
    CHECK(answer.exit_code == 0);
    CHECK(contains(answer.out, "usage: dqctl " + command));
    CHECK(answer.err.empty());
    // -h is the same.
    args.back() = "-h";
    CHECK(dq::test::run_dqctl(args, dir.path).exit_code == 0);
  }
  // `topic add --help` shows the options of add, continuation lines included.
  RunResult add = dq::test::run_dqctl({"topic", "add", "--help"}, dir.path);
  CHECK(contains(add.out, "--max-attempts"));
  CHECK_FALSE(contains(add.out, "topic del"));
}

TEST_CASE("--version and --help of dqd and dqctl") {
  TempDir dir;
  RunResult version = dqd({"--version"}, dir.path);
  CHECK(version.exit_code == 0);
  CHECK(contains(version.out, "dqd 0."));
  RunResult help = dqd({"--help"}, dir.path);
  CHECK(help.exit_code == 0);
  CHECK(contains(help.out, "--check"));
  CHECK(dqd({"--no-such-flag"}, dir.path).exit_code == 2);
  RunResult ctl = dq::test::run_dqctl({"--version"}, dir.path);
  CHECK(ctl.exit_code == 0);
  CHECK(contains(ctl.out, "dqctl 0."));
}

TEST_CASE("dqd --check: passes on a good config, fails on an unreachable shard or a bad config") {
  TempDir dir;
  dq::test::TestRedis redis;
  std::string good = write_config(dir.path, redis.address());
  RunResult passed = dqd({"--check", "-c", good}, dir.path);
  CAPTURE(passed.out);
  CHECK(passed.exit_code == 0);
  CHECK(contains(passed.out, "all checks passed"));
  CHECK(contains(passed.out, "shard " + redis.address()));
  CHECK(contains(passed.out, "sqlite"));

  TempDir other;
  std::string unreachable = write_config(other.path, redis.address() + ",127.0.0.1:1");
  RunResult failed = dqd({"--check", "-c", unreachable}, other.path);
  CAPTURE(failed.out);
  CHECK(failed.exit_code == 1);
  CHECK(contains(failed.out, "FAIL  shard 127.0.0.1:1"));
  CHECK(contains(failed.out, "1 problem(s)"));

  std::ofstream(other.path + "/bad.ini") << "[server]\nworkers = many\n";
  RunResult bad = dqd({"--check", "-c", other.path + "/bad.ini"}, other.path);
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.out, "server.workers"));
  CHECK(dqd({"--check", "-c", other.path + "/missing.ini"}, other.path).exit_code == 1);

  // A lease margin of 0 gave stale acks: below 200 ms it is refused by the
  // check and by the config load dqd starts with.
  std::ofstream(other.path + "/margin.ini") << "[delivery]\nlease_margin_ms = 0\n";
  RunResult margin = dqd({"--check", "-c", other.path + "/margin.ini"}, other.path);
  CHECK(margin.exit_code == 1);
  CHECK_MESSAGE(contains(margin.out, "delivery.lease_margin_ms = '0' must be an integer from 200"),
                margin.out);
  RunResult start = dqd({"--test-config", "-c", other.path + "/margin.ini"}, other.path);
  CHECK(start.exit_code != 0);
  CHECK_MESSAGE(contains(start.out + start.err, "delivery.lease_margin_ms"),
                (start.out + start.err));
}

TEST_CASE("an unknown topic is an error (exit 1) wherever a topic is named") {
  dq::test::TestRedis redis;
  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  dq::test::DqdProcess server(options);
  server.add_topic("known");
  server.start();
  std::string target = "127.0.0.1:" + std::to_string(server.http_port());
  std::vector<std::vector<std::string>> named = {
      {"dead", "list", "nosuchtopic"},   {"dead", "requeue", "nosuchtopic", "--all"},
      {"dead", "purge", "nosuchtopic"},  {"add", "nosuchtopic", "i1", "{}"},
      {"get", "nosuchtopic", "i1"},      {"del", "nosuchtopic", "i1"},
      {"topic", "show", "nosuchtopic"},  {"topic", "del", "nosuchtopic"},
      {"topic", "online", "nosuchtopic"}};
  for (auto args : named) {
    args.insert(args.begin(), {"-c", server.config_path(), "-s", target});
    RunResult result = dq::test::run_dqctl(args, server.dir());
    CAPTURE(args[4]);
    CAPTURE(result.err);
    CHECK(result.exit_code == 1);
    CHECK(contains(result.err, "nosuchtopic"));
  }
  // The known topic works the same way (the check is not a blanket refusal).
  RunResult listed = dq::test::run_dqctl(
      {"-c", server.config_path(), "-s", target, "dead", "list", "known"}, server.dir());
  CHECK(listed.exit_code == 0);
}

TEST_CASE("[log] format = json writes one JSON object per line; keep_days removes old files") {
  dq::test::TestRedis redis;
  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  options.extra_ini = "[log]\nformat = json\nkeep_days = 3\n";
  dq::test::DqdProcess server(options);
  std::filesystem::create_directories(server.log_dir());
  char today[16];
  time_t now = time(nullptr);
  struct tm local {};
  localtime_r(&now, &local);
  strftime(today, sizeof(today), "%Y%m%d", &local);
  for (std::string old : {"err_20200101.log", "notify_20200102.log.1", "request_20200103.log.gz"}) {
    std::ofstream(server.log_dir() + "/" + old) << "old\n";
  }
  std::ofstream(server.log_dir() + "/unrelated_20200101.txt") << "not ours\n";
  server.start();
  REQUIRE(dq::test::wait_until(
      5000, [&] { return !std::filesystem::exists(server.log_dir() + "/err_20200101.log"); }));
  CHECK_FALSE(std::filesystem::exists(server.log_dir() + "/notify_20200102.log.1"));
  CHECK_FALSE(std::filesystem::exists(server.log_dir() + "/request_20200103.log.gz"));
  CHECK(std::filesystem::exists(server.log_dir() + "/unrelated_20200101.txt"));

  std::string errors = dq::test::read_text_file(server.log_dir() + "/err_" + today + ".log");
  REQUIRE_FALSE(errors.empty());
  std::istringstream lines(errors);
  int parsed = 0;
  bool saw_master = false;
  for (std::string line; std::getline(lines, line);) {
    CAPTURE(line);
    dq::Json entry = dq::Json::parse(line);  // throws (fails the test) on a bad line
    CHECK(entry.contains("time"));
    CHECK(entry["log"] == "err");
    CHECK(entry["pid"].is_number());
    CHECK(entry.contains("level"));
    saw_master = saw_master || entry["process"] == "dq-master";
    ++parsed;
  }
  CHECK(parsed > 0);
  CHECK(saw_master);
  CHECK(contains(errors, "removed 3 log files"));
  CHECK(server.stop() == 0);
}

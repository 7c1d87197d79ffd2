// The registry's SQLite file deleted, replaced or corrupted under a running
// dqd (common/registry/registry_file.h), against a real dqd, Redis, receiver
// and dqctl: dqctl does not write a registry beside it; dqd keeps serving
// what it read, says so in the err log, /healthz and /metrics, and serves the
// file put back after a restart; a file that cannot be read is logged once,
// then with a count. Every job is counted.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::contains;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::TestRedis;

namespace {

std::string err_log_text(const DqdProcess& dqd) {
  std::string all;
  for (const auto& entry : std::filesystem::directory_iterator(dqd.log_dir())) {
    if (entry.path().filename().string().rfind("err_", 0) == 0) {
      all += dq::test::read_text_file(entry.path().string());
    }
  }
  return all;
}

struct FileWorld {
  FileWorld() {
    dqd = std::make_unique<DqdProcess>(dq::test::one_timer_one_consumer({redis.address()}));
    // Made with dqctl, so this test process never holds the file open.
    for (const char* topic : {"t1", "t2"}) {
      auto made = dqctl({"topic", "add", topic, "--callback", callback.url()});
      REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    }
    dqd->start();
  }

  int add(const std::string& topic, const std::string& id) {
    auto answer = http.post(dqd->jobs_url(topic), dq::test::job_doc(id, Json{{"id", id}}, 0.2));
    if (answer.status == 201) {
      accepted.push_back(id);
    }
    return static_cast<int>(answer.status);
  }

  Json healthz() { return http.get(dqd->base_url() + "/healthz").json(); }

  dq::test::RunResult dqctl(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"-c", dqd->config_path()};
    all.insert(all.end(), args.begin(), args.end());
    return dq::test::run_dqctl(all, dqd->dir());
  }

  // Each accepted job delivered exactly once, nothing else delivered.
  void check_each_delivered_once() {
    CHECK(callback.wait_for(accepted.size(), 15000));
    dq::test::sleep_ms(500);
    std::map<std::string, int> by_id = dq::test::deliveries_by_id(callback);
    for (const auto& id : accepted) {
      CAPTURE(id);
      CHECK(by_id[id] == 1);
    }
    CHECK(by_id.size() == accepted.size());
  }

  TestRedis redis;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
  HttpClient http;
  std::vector<std::string> accepted;
};

}  // namespace

TEST_CASE("dq.db deleted under a running dqd: dqctl makes no new one, dqd says so and serves on") {
  FileWorld world;
  REQUIRE(world.add("t1", "before") == 201);
  const std::string path = world.dqd->sqlite_path();
  REQUIRE(std::filesystem::remove(path));

  // dqctl sees the running master and refuses to create an empty registry.
  auto added = world.dqctl({"topic", "add", "t3", "--callback", world.callback.url()});
  CAPTURE(added.out);
  CAPTURE(added.err);
  CHECK(added.exit_code == 3);
  CHECK_FALSE(contains(added.out, "added"));
  CHECK(contains(added.err, "does not exist, but dqd (pid "));
  CHECK(contains(added.err, "deleted while dqd runs"));
  CHECK_FALSE(std::filesystem::exists(path));

  // dqd says it: err log, /healthz, /metrics.
  bool said = dq::test::wait_until(5000, [&] {
    return contains(err_log_text(*world.dqd), "the registry file " + path + " was deleted");
  });
  CHECK_MESSAGE(said, err_log_text(*world.dqd));
  Json health;
  CHECK(dq::test::wait_until(5000, [&] {
    health = world.healthz();
    return health["registry"].value("ok", true) == false;
  }));
  CAPTURE(health.dump());
  CHECK(contains(health["registry"].value("error", ""), "was deleted while dq runs"));
  CHECK(health["status"] == "ok");  // jobs of known topics are still taken
  CHECK(contains(world.http.get(world.dqd->base_url() + "/metrics").body, "dq_registry_file_ok 0"));

  // It serves what it read; t3 was never made anywhere.
  CHECK(world.add("t1", "during") == 201);
  CHECK(world.add("t2", "during-2") == 201);
  CHECK(world.add("t3", "nowhere") == 404);

  // A respawned API server does not make a new, empty file either (and says why).
  std::vector<pid_t> servers = dq::test::children_titled(world.dqd->pid(), "dq-server_");
  REQUIRE(servers.size() == 1);
  kill(servers[0], SIGKILL);
  CHECK(dq::test::wait_until(10000, [&] {
    auto now = dq::test::children_titled(world.dqd->pid(), "dq-server_");
    return now.size() == 1 && now[0] != servers[0] &&
           contains(world.healthz()["registry"].value("error", ""), "does not create an empty");
  }));
  CHECK_FALSE(std::filesystem::exists(path));

  // Kept as dqctl says: the held file and its journal copied out, dqd
  // stopped, both put back, dqd started: every topic is there again.
  auto asked = world.dqctl({"topic", "list"});
  CAPTURE(asked.err);
  std::string holders;  // which processes hold the deleted file, when the message names none
  for (pid_t child : dq::test::children_titled(world.dqd->pid(), "dq-")) {
    std::error_code error;
    for (const auto& fd :
         std::filesystem::directory_iterator("/proc/" + std::to_string(child) + "/fd", error)) {
      auto target = std::filesystem::read_symlink(fd.path(), error);
      if (!error && contains(target.string(), "dq.db")) {
        holders += fd.path().string() + " -> " + target.string() + "\n";
      }
    }
  }
  CAPTURE(holders);
  std::string status_file = dq::test::read_text_file(world.dqd->dir() + "/dqd.pid.status.json");
  CAPTURE(status_file);
  CHECK(asked.exit_code == 3);
  std::smatch held;
  REQUIRE(std::regex_search(asked.err, held, std::regex("cp (/proc/[0-9]+/fd/[0-9]+) ")));
  std::filesystem::copy_file(held[1].str(), path + ".kept");
  std::filesystem::copy_file(path + "-wal", path + ".kept-wal");
  REQUIRE(world.dqd->stop() == 0);
  std::filesystem::remove(path + "-shm");
  std::filesystem::rename(path + ".kept", path);
  std::filesystem::rename(path + ".kept-wal", path + "-wal");
  world.dqd->start();
  CHECK(world.healthz()["registry"]["ok"] == true);
  auto again = world.dqctl({"topic", "add", "t3", "--callback", world.callback.url()});
  CHECK_MESSAGE(again.exit_code == 0, again.err);
  CHECK(dq::test::wait_until(5000, [&] { return world.add("t3", "after") == 201; }));
  CHECK(world.add("t1", "after-1") == 201);
  CHECK(world.add("t2", "after-2") == 201);
  world.check_each_delivered_once();
}

TEST_CASE(
    "dq.db replaced under a running dqd: served on from the old one; the new one after a restart") {
  FileWorld world;
  const std::string path = world.dqd->sqlite_path();
  // A registry (a backup: t1 and t9, no t2), written by dqctl elsewhere,
  // moved over it.
  const std::string backup = world.dqd->dir() + "/backup.db";
  {
    std::ofstream ini(world.dqd->dir() + "/backup.ini");
    // Not shared: the backup is this file alone, not the registry every
    // host on the shard shares.
    ini << "[sqlite]\npath = " << backup << "\n[redis]\nshards = " << world.redis.address()
        << "\n[registry]\nshared = no\n";
  }
  for (const char* topic : {"t1", "t9"}) {
    auto made = dq::test::run_dqctl({"-c", world.dqd->dir() + "/backup.ini", "topic", "add", topic,
                                     "--callback", world.callback.url()},
                                    world.dqd->dir());
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  }
  std::filesystem::rename(backup, path);

  bool said = dq::test::wait_until(5000, [&] {
    return contains(err_log_text(*world.dqd), "was replaced by another file while dq runs");
  });
  CHECK_MESSAGE(said, err_log_text(*world.dqd));
  // The API server sees it at its next registry read (each process reads on its own).
  CHECK(dq::test::wait_until(5000, [&] { return world.healthz()["registry"]["ok"] == false; }));
  // The old registry still serves; the new one is not read beside the old journal.
  auto old_topic = world.http.post(world.dqd->jobs_url("t2"), dq::test::job_doc("old", 1, 600));
  CHECK(old_topic.status == 201);
  CHECK(world.http.request("DELETE", world.dqd->jobs_url("t2") + "/old").status == 204);
  CHECK(world.add("t1", "old-served") == 201);
  CHECK(world.add("t9", "not-yet") == 404);
  // dqctl would write where dqd does not read: refused.
  auto refused = world.dqctl({"topic", "add", "t4", "--callback", world.callback.url()});
  CHECK(refused.exit_code == 3);
  CHECK(contains(refused.err, "was replaced while dqd (pid "));

  // After a restart dqd serves the file at the path.
  REQUIRE(world.dqd->stop() == 0);
  world.dqd->start();
  CHECK(world.healthz()["registry"]["ok"] == true);
  CHECK(world.add("t9", "new-topic") == 201);
  CHECK(world.add("t2", "gone-topic") == 404);
  CHECK(world.add("t1", "still") == 201);
  world.check_each_delivered_once();
}

TEST_CASE("a corrupt registry file is logged once, then with a count, not every second") {
  FileWorld world;
  REQUIRE(world.add("t1", "before") == 201);
  world.check_each_delivered_once();
  REQUIRE(world.dqd->stop() == 0);
  // The file's first page overwritten: SQLite answers "file is not a database".
  {
    std::fstream file(world.dqd->sqlite_path(), std::ios::in | std::ios::out | std::ios::binary);
    std::string junk(4096, 'x');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  std::filesystem::remove(world.dqd->sqlite_path() + "-wal");
  std::filesystem::remove(world.dqd->sqlite_path() + "-shm");
  std::string before = err_log_text(*world.dqd);
  world.dqd->start();
  dq::test::sleep_ms(13000);  // past a 10 s window: the count is written
  std::string text = err_log_text(*world.dqd).substr(before.size());
  size_t lines = dq::test::occurrences(text, "\n");
  size_t not_a_database = dq::test::occurrences(text, "not a database");
  MESSAGE(lines, " err lines in 13 s, ", not_a_database, " naming the file");
  CHECK(not_a_database > 0);            // said,
  CHECK(contains(text, "(repeated "));  // with a count,
  // not once a second by each of the ~5 processes that read it (60+ before).
  CHECK(not_a_database <= 25);
  CHECK(lines <= 60);
}

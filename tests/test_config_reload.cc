// The automatic reload takes only a whole, stable config file and never
// moves the registry, a listener or every shard on its own; SIGUSR2 does.
// Against the real dqd: a file cut short, an empty file and a file written
// slowly in pieces, with adds running all along (every one must answer 201
// and stay stored); plus the watch and the rules on their own.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "common/core/config.h"
#include "common/core/master_status.h"
#include "master/config_moves.h"
#include "master/config_watch.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/text_files.h"

using dq::Json;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::read_text;
using dq::test::sleep_ms;
using dq::test::TestRedis;

namespace {

// Writes the file in place (truncated, then written), as an editor saving
// over it does; no rename.
void write_in_place(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string err_logs(const DqdProcess& dqd) { return dq::test::read_logs(dqd.log_dir(), "err"); }

bool err_logged(const DqdProcess& dqd, const std::string& text, int timeout_ms = 15000) {
  return dq::test::wait_until(timeout_ms,
                              [&] { return err_logs(dqd).find(text) != std::string::npos; });
}

int generation(const DqdProcess& dqd) {
  auto status = dq::read_master_status(dqd.dir() + "/dqd.pid");
  return status.is_ok() ? status->value("generation", 0) : 0;
}

// Adds a job (due in 10 minutes) every few ms from its own thread, and
// keeps every answer's status by id.
class AddStream {
 public:
  AddStream(std::string jobs_url, std::string prefix)
      : jobs_url_(std::move(jobs_url)), prefix_(std::move(prefix)) {
    thread_ = std::thread([this] {
      HttpClient http;
      for (int n = 0; !stop_; ++n) {
        std::string id = prefix_ + std::to_string(n);
        long status = http.post(jobs_url_, dq::test::job_doc(id, n, 600)).status;
        std::lock_guard<std::mutex> lock(mutex_);
        answers_[id] = status;
        sleep_ms(5);
      }
    });
  }
  ~AddStream() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  // Statuses other than 201, with how often.
  std::map<long, int> not_created() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<long, int> counts;
    for (const auto& [id, status] : answers_) {
      if (status != 201) {
        counts[status]++;
      }
    }
    return counts;
  }
  std::map<std::string, long> answers() {
    std::lock_guard<std::mutex> lock(mutex_);
    return answers_;
  }

 private:
  std::string jobs_url_;
  std::string prefix_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::map<std::string, long> answers_;
  std::thread thread_;
};

// Every job a 201 answered is still pending (GET 200): none lost.
int lost_jobs(const DqdProcess& dqd, const std::map<std::string, long>& answers) {
  HttpClient http;
  int lost = 0;
  for (const auto& [id, status] : answers) {
    if (status == 201 && http.get(dqd.jobs_url("orders") + "/" + id).status != 200) {
      ++lost;
    }
  }
  return lost;
}

DqdOptions api_only(const TestRedis& redis) {
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 0;
  options.consumers = 0;
  options.drain_timeout_ms = 2000;
  return options;
}

}  // namespace

TEST_CASE("a config file cut short, emptied or written slowly changes nothing while adds go on") {
  TestRedis redis;
  DqdProcess dqd(api_only(redis));
  dqd.add_topic("orders");
  dqd.start();
  const std::string path = dqd.config_path();
  const std::string whole = read_text(path);
  size_t sqlite_section = whole.find("[sqlite]");
  REQUIRE(sqlite_section != std::string::npos);
  AddStream adds(dqd.jobs_url("orders"), "cfg-");

  SUBCASE("cut before [sqlite], as a save in progress leaves it") {
    write_in_place(path, whole.substr(0, sqlite_section));
    CHECK(err_logged(dqd,
                     "reload (config file changed) rejected, generation 1 keeps running: the "
                     "config file is the running one cut short (its first " +
                         std::to_string(sqlite_section) + " of " + std::to_string(whole.size()) +
                         " bytes"));
    CHECK(err_logs(dqd).find("not applied by the automatic reload") != std::string::npos);
  }
  SUBCASE("emptied") {
    write_in_place(path, "");
    CHECK(err_logged(dqd,
                     "reload (config file changed) rejected, generation 1 keeps running: the "
                     "config file is empty: not applied by the automatic reload"));
  }
  SUBCASE("written slowly in pieces, each a part of the file") {
    // Each piece lands well within the settle time after the one before.
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (size_t at = 0; at < whole.size(); at += whole.size() / 8 + 1) {
      out << whole.substr(at, whole.size() / 8 + 1) << std::flush;
      sleep_ms(400);
    }
    out.close();
    CHECK(err_logged(dqd, "the config file is still being written"));
    CHECK(err_logged(dqd, "the config file is back to the one in use: nothing to reload"));
  }
  // The file as it was: nothing to reload either.
  write_in_place(path, whole);
  sleep_ms(3000);
  adds.stop();
  CHECK(generation(dqd) == 1);
  std::string errors = err_logs(dqd);
  CHECK(errors.find("generation 2 started") == std::string::npos);
  auto answers = adds.answers();
  CHECK(answers.size() > 100);
  CHECK(adds.not_created().empty());
  CHECK(lost_jobs(dqd, answers) == 0);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("a change written slowly is taken once, when whole") {
  TestRedis redis;
  DqdProcess dqd(api_only(redis));
  dqd.add_topic("orders");
  dqd.start();
  std::string changed = read_text(dqd.config_path());
  size_t workers = changed.find("workers = 1\n");
  REQUIRE(workers != std::string::npos);
  changed.replace(workers, 11, "workers = 2");
  AddStream adds(dqd.jobs_url("orders"), "slow-");
  {
    std::ofstream out(dqd.config_path(), std::ios::binary | std::ios::trunc);
    for (size_t at = 0; at < changed.size(); at += changed.size() / 6 + 1) {
      out << changed.substr(at, changed.size() / 6 + 1) << std::flush;
      sleep_ms(500);
      CHECK(generation(dqd) == 1);  // no part of it is taken
    }
  }
  CHECK(err_logged(dqd, "reload (config file changed): generation 2 started"));
  sleep_ms(3000);
  adds.stop();
  CHECK(generation(dqd) == 2);  // once
  CHECK(err_logs(dqd).find("the config file settled after") != std::string::npos);
  CHECK(adds.not_created().empty());
  CHECK(lost_jobs(dqd, adds.answers()) == 0);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("a move of the registry or a listener waits for SIGUSR2, which applies it") {
  TestRedis redis;
  DqdOptions options = api_only(redis);
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  int other_port = dq::test::free_port();
  options.extra_ini =
      "[sqlite]\npath = other.db\n[server]\nlisten = 127.0.0.1:" + std::to_string(other_port) +
      "\n";
  AddStream adds(dqd.jobs_url("orders"), "move-");
  // A whole, valid file written at once (a rename): it settles and is looked at.
  std::string old_listen = "127.0.0.1:" + std::to_string(dqd.http_port());
  dqd.rewrite_config(options);
  CHECK(err_logged(
      dqd, "the registry path changed from " + dqd.dir() + "/dq.db to " + dqd.dir() + "/other.db"));
  CHECK(err_logged(dqd, "[server] listen changed from " + old_listen +
                            " to 127.0.0.1:" + std::to_string(other_port) +
                            ": not applied by the automatic reload; send SIGUSR2 to apply"));
  sleep_ms(1500);
  CHECK(generation(dqd) == 1);
  CHECK(dq::test::http_request("GET", "http://127.0.0.1:" + std::to_string(other_port) + "/healthz")
            .status == 0);
  adds.stop();
  CHECK(adds.not_created().empty());
  CHECK(lost_jobs(dqd, adds.answers()) == 0);

  // The operator means it.
  REQUIRE(kill(dqd.pid(), SIGUSR2) == 0);
  CHECK(err_logged(dqd, "reload (SIGUSR2) applies a move: [server] listen changed"));
  CHECK(err_logged(dqd, "reload (SIGUSR2): generation 2 started"));
  std::string moved = "http://127.0.0.1:" + std::to_string(other_port);
  CHECK(dq::test::wait_until(
      10000, [&] { return dq::test::http_request("GET", moved + "/healthz").status == 200; }));
  // The registry file is the new one, filled from the shared registry (the
  // default): the topic made before the move is known there too.
  CHECK(dq::test::wait_until(10000,
                             [&] { return std::filesystem::exists(dqd.dir() + "/other.db"); }));
  CHECK(dq::test::wait_until(10000, [&] {
    return dq::test::http_request("POST", moved + "/v1/topics/orders/jobs",
                                  dq::test::job_doc("after-move", 1, 600))
               .status == 201;
  }));
  CHECK(dqd.stop() == 0);
}

TEST_CASE("ConfigWatch hands a change over once it stayed the same for the settle time") {
  std::string dir = dq::test::make_temp_dir("dq-watch");
  std::string path = dir + "/dq.ini";
  write_in_place(path, "[server]\nworkers = 1\n");
  dq::ConfigWatch watch(path, 2000);
  CHECK_FALSE(watch.look(0));
  // touch: nothing.
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now());
  CHECK_FALSE(watch.look(100));
  CHECK_FALSE(watch.settling());

  write_in_place(path, "[server]\nworkers = 2\n");
  CHECK_FALSE(watch.look(1000));
  CHECK(watch.settling());
  CHECK_FALSE(watch.look(2500));                    // 1.5 s stable: not yet
  write_in_place(path, "[server]\nworkers = 3\n");  // written again: the clock starts over
  CHECK_FALSE(watch.look(2600));
  CHECK_FALSE(watch.look(4500));
  auto change = watch.look(4600);
  REQUIRE(change);
  CHECK(change->contents == "[server]\nworkers = 3\n");
  CHECK(change->writes == 2);
  CHECK_FALSE(watch.look(9000));  // handed over once

  // Back to what was handed over while settling: nothing to hand over.
  write_in_place(path, "[server]\nworkers = 4\n");
  CHECK_FALSE(watch.look(10000));
  write_in_place(path, "[server]\nworkers = 3\n");
  CHECK_FALSE(watch.look(10500));
  CHECK_FALSE(watch.settling());
  CHECK_FALSE(watch.look(20000));

  // Gone for a moment (replaced by rename): still settling.
  write_in_place(path, "[server]\nworkers = 5\n");
  CHECK_FALSE(watch.look(21000));
  std::filesystem::remove(path);
  CHECK_FALSE(watch.look(22500));
  write_in_place(path, "[server]\nworkers = 5\n");
  CHECK_FALSE(watch.look(23000));
  CHECK(watch.look(25000));
  dq::test::remove_dir(dir);
}

TEST_CASE("incomplete_config_reason and config_moves say what a file would do") {
  const std::string running = "[server]\nworkers = 1\n[sqlite]\npath = /var/lib/dq/dq.db\n";
  CHECK(dq::incomplete_config_reason(running, "") == "the config file is empty");
  CHECK(dq::incomplete_config_reason(running, " \n\n") == "the config file is empty");
  CHECK(dq::incomplete_config_reason(running, "[server]\nworkers = 1\n")
            .rfind("the config file is the running one cut short (its first 21 of", 0) == 0);
  CHECK(dq::incomplete_config_reason(running, running + "[log]\nlevel = info\n").empty());
  CHECK(dq::incomplete_config_reason(running, "[server]\nworkers = 2\n").empty());

  dq::Config before;
  before.sqlite_path = "/var/lib/dq/dq.db";
  before.shards = *dq::parse_shard_list("10.0.0.1:6379,10.0.0.2:6379");
  dq::Config after = before;
  CHECK(dq::config_moves(before, after).empty());
  after.shards = *dq::parse_shard_list("10.0.0.2:6379,10.0.0.3:6379");  // one kept
  CHECK(dq::config_moves(before, after).empty());
  after.shards = *dq::parse_shard_list("127.0.0.1:6379");
  after.sqlite_path = "/etc/dq/dq.db";
  after.legacy_listen = "";
  auto moves = dq::config_moves(before, after);
  REQUIRE(moves.size() == 3);
  CHECK(moves[0] == "the registry path changed from /var/lib/dq/dq.db to /etc/dq/dq.db");
  CHECK(moves[1] == "[server] legacy_listen changed from 127.0.0.1:6789 to off");
  CHECK(moves[2] == "every shard changed, from 10.0.0.1:6379,10.0.0.2:6379 to 127.0.0.1:6379");
}

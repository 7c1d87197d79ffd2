// End-to-end tests of the master (dqd): the real build/dqd over a real
// redis-server, its children found through /proc, driven with signals.
#include <dirent.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/core/clock.h"
#include "common/core/master_status.h"
#include "common/redis/redis_sync.h"
#include "common/registry/registry.h"
#include "common/store/job_store.h"
#include "common/store/keys.h"
#include "master/child_table.h"
#include "tests/support/callback_server.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/dqd_process.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/text_files.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::read_logs;
using dq::test::read_text;
using dq::test::TestRedis;

namespace {

struct ProcInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';
  std::string title;  // /proc/PID/cmdline up to the first NUL
};

bool read_proc(pid_t pid, ProcInfo* info) {
  std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) {
    return false;
  }
  std::istringstream rest(stat.substr(close_paren + 2));
  rest >> info->state >> info->ppid;
  info->pid = pid;
  std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
  info->title = cmdline.substr(0, cmdline.find('\0'));
  return true;
}

// Live (not zombie) children of `parent`.
std::vector<ProcInfo> children_of(pid_t parent) {
  std::vector<ProcInfo> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    return found;
  }
  while (dirent* entry = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    ProcInfo info;
    if (pid > 0 && read_proc(pid, &info) && info.ppid == parent && info.state != 'Z') {
      found.push_back(info);
    }
  }
  closedir(proc);
  return found;
}

// title -> pid of the dq children (not redis-server); duplicates FAIL.
std::map<std::string, pid_t> dq_children(pid_t parent) {
  std::map<std::string, pid_t> titles;
  for (const auto& child : children_of(parent)) {
    if (child.title.rfind("dq-", 0) != 0) {
      continue;
    }
    titles[child.title] = child.pid;
  }
  return titles;
}

bool alive(pid_t pid) {
  ProcInfo info;
  return read_proc(pid, &info) && info.state != 'Z';
}

bool wait_until(const std::function<bool()>& done, int timeout_ms) {
  int64_t deadline = dq::monotonic_ms() + timeout_ms;
  while (dq::monotonic_ms() < deadline) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// A line a process logs right after the event a test waited for can land a
// moment later on a loaded machine: wait for it rather than read once.
bool logged(const std::string& dir, const std::string& kind, const std::string& text,
            int timeout_ms = 2000) {
  return wait_until([&] { return read_logs(dir, kind).find(text) != std::string::npos; },
                    timeout_ms);
}

std::set<std::string> log_files(const std::string& dir) {
  std::set<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

DqdOptions options_for(const TestRedis& redis, int workers, int timers, int consumers) {
  DqdOptions options;
  options.shards = {redis.address()};
  options.workers = workers;
  options.timers = timers;
  options.consumers = consumers;
  options.drain_timeout_ms = 3000;
  return options;
}

// Background producer of GET /healthz (or adds), counting failures.
class RequestLoop {
 public:
  explicit RequestLoop(std::function<bool(HttpClient&, int)> one) : one_(std::move(one)) {
    thread_ = std::thread([this] {
      HttpClient http;
      for (int n = 0; !stop_; ++n) {
        if (one_(http, n)) {
          ++ok_;
        } else {
          ++failed_;
        }
      }
    });
  }
  ~RequestLoop() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  int ok() const { return ok_; }
  int failed() const { return failed_; }

 private:
  std::function<bool(HttpClient&, int)> one_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  std::thread thread_;
};

// A GET in flight on a server killed with -9 dies with it (the connection is
// reset); a client retries such a GET once, as libdqclient does. A second
// failure in a row, or an answer other than 200, is a failure.
std::atomic<int> g_healthz_retries{0};

RequestLoop healthz_loop(const DqdProcess& dqd) {
  std::string url = dqd.base_url() + "/healthz";
  return RequestLoop([url](HttpClient& http, int) {
    int status = http.get(url).status;
    if (status == 0) {
      ++g_healthz_retries;
      status = http.get(url).status;
    }
    return status == 200;
  });
}

// Adds ids prefix0, prefix1, ... to `topic`, due in 10 minutes; anything but
// 201 is a failure.
RequestLoop adds_loop(const DqdProcess& dqd, const std::string& topic, const std::string& prefix) {
  std::string jobs = dqd.jobs_url(topic);
  return RequestLoop([jobs, prefix](HttpClient& http, int n) {
    Json job{{"id", prefix + std::to_string(n)}, {"body", n}, {"delay", 600}};
    return http.post(jobs, job.dump()).status == 201;
  });
}

}  // namespace

TEST_CASE("respawn backoff: at once, then 0.5 s doubling up to 30 s") {
  CHECK(dq::respawn_delay_ms(1) == 0);
  CHECK(dq::respawn_delay_ms(2) == 500);
  CHECK(dq::respawn_delay_ms(3) == 1000);
  CHECK(dq::respawn_delay_ms(4) == 2000);
  CHECK(dq::respawn_delay_ms(9) == 30000);
  CHECK(dq::respawn_delay_ms(100) == 30000);
}

TEST_CASE("dqd forks every role with its process title and count") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 2, 1, 2));
  dqd.start();
  std::map<std::string, pid_t> titles;
  REQUIRE(wait_until([&] { return (titles = dq_children(dqd.pid())).size() == 6; }, 3000));
  std::set<std::string> names;
  for (const auto& entry : titles) {
    names.insert(entry.first);
  }
  CHECK(names == std::set<std::string>{"dq-server_0", "dq-server_1", "dq-timer_0", "dq-consume_0",
                                       "dq-consume_1", "dq-redis-checker"});
  // The kernel's short name is set too (top, /proc/PID/comm).
  CHECK(read_text("/proc/" + std::to_string(titles["dq-timer_0"]) + "/comm") == "dq-timer_0\n");
  // No child of a child: every role is a direct child of the master.
  for (const auto& entry : titles) {
    CHECK(dq_children(entry.second).empty());
  }
  CHECK(dqd.stop() == 0);
}

TEST_CASE("kill -9 of any child: back within 1 s while the service keeps answering") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 2, 1, 1));
  dqd.start();
  REQUIRE(wait_until([&] { return dq_children(dqd.pid()).size() == 5; }, 3000));
  g_healthz_retries = 0;
  RequestLoop loop = healthz_loop(dqd);
  for (const std::string title :
       {"dq-server_0", "dq-timer_0", "dq-consume_0", "dq-server_1", "dq-redis-checker"}) {
    CAPTURE(title);
    pid_t old_pid = dq_children(dqd.pid())[title];
    REQUIRE(old_pid > 0);
    int64_t killed_at = dq::monotonic_ms();
    REQUIRE(kill(old_pid, SIGKILL) == 0);
    pid_t new_pid = 0;
    bool back = wait_until(
        [&] {
          auto now = dq_children(dqd.pid());
          new_pid = now.count(title) ? now[title] : 0;
          return new_pid > 0 && new_pid != old_pid;
        },
        1000);
    CHECK(back);
    CHECK(dq::monotonic_ms() - killed_at <= 1000);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  loop.stop();
  CHECK(loop.ok() > 0);
  CHECK(loop.failed() == 0);
  CHECK(g_healthz_retries <= 2);  // at most the requests in flight on the two killed servers
  CHECK(logged(dqd.log_dir(), "err", "dq-server_0 (pid"));
  CHECK(dqd.stop() == 0);
}

TEST_CASE("USR2: a new generation replaces every child, no request fails, the master stays") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 2, 1, 2));
  dqd.add_topic("reload");
  dqd.start();
  std::map<std::string, pid_t> before;
  REQUIRE(wait_until([&] { return (before = dq_children(dqd.pid())).size() == 6; }, 3000));
  pid_t master = dqd.pid();

  RequestLoop adds = adds_loop(dqd, "reload", "r-");
  RequestLoop health = healthz_loop(dqd);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(kill(master, SIGUSR2) == 0);

  bool replaced = wait_until(
      [&] {
        auto now = dq_children(master);
        if (now.size() != before.size()) {
          return false;
        }
        for (const auto& entry : before) {
          if (now[entry.first] == entry.second || alive(entry.second)) {
            return false;
          }
        }
        return true;
      },
      5000);
  CHECK(replaced);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  adds.stop();
  health.stop();
  CHECK(adds.ok() > 0);
  CHECK(adds.failed() == 0);
  CHECK(health.failed() == 0);
  CHECK(dqd.pid() == master);
  CHECK(dqd.running());
  CHECK(logged(dqd.log_dir(), "err", "reload (SIGUSR2): generation 2 started"));
  CHECK(dqd.stop() == 0);
}

// The new generation shares the listening sockets with the old one while
// its shard connections are still being made (here each takes ~2 x 150 ms:
// connect, then AUTH through a slow link). A new server that took requests
// before its shard was up answered them 503 "shard is down" (seen in CI as
// one failed /healthz).
TEST_CASE("USR2 with a shard slow to connect: no request fails while the new servers connect") {
  TestRedis redis;
  redis.command({"CONFIG", "SET", "requirepass", "s3cret"});
  dq::test::DelayProxy slow_link(redis.port(), 150);
  DqdOptions options = options_for(redis, 2, 1, 1);
  options.shards = {slow_link.address() + ":s3cret"};
  options.extra_ini = "[redis]\nconnect_timeout_ms = 3000\ncommand_timeout_ms = 3000\n";
  DqdProcess dqd(options);
  dqd.add_topic("reload");
  dqd.start();
  REQUIRE(wait_until([&] { return dq_children(dqd.pid()).size() == 5; }, 5000));
  // Both servers of the first generation are connected before the loops start.
  REQUIRE(logged(dqd.log_dir(), "err", "redis shard " + slow_link.address() + " is up", 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));

  // Health checks only: what they show is which server answered, and a new
  // server that answers before its shard is up answers 503.
  RequestLoop health = healthz_loop(dqd);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  for (int generation = 2; generation <= 3; ++generation) {
    CAPTURE(generation);
    REQUIRE(kill(dqd.pid(), SIGUSR2) == 0);
    // The master checks the shards (through the slow link) before it forks.
    CHECK(logged(dqd.log_dir(), "err",
                 "reload (SIGUSR2): generation " + std::to_string(generation) + " started", 15000));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  health.stop();
  CHECK(health.ok() > 0);
  CHECK(health.failed() == 0);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("a bad config is rejected on reload and the old generation keeps running") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 1, 1, 1));
  dqd.start();
  std::map<std::string, pid_t> before;
  REQUIRE(wait_until([&] { return (before = dq_children(dqd.pid())).size() == 4; }, 3000));

  {
    std::ofstream out(dqd.config_path(), std::ios::app);
    out << "[server]\nworkers = many\n";
  }
  REQUIRE(kill(dqd.pid(), SIGUSR2) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // also past one config-watch poll
  CHECK(dq_children(dqd.pid()) == before);
  CHECK(dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200);
  std::string errors = read_logs(dqd.log_dir(), "err");
  CHECK(errors.find("rejected, generation 1 keeps running") != std::string::npos);
  CHECK(errors.find("server.workers") != std::string::npos);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("a changed config file reloads on its own") {
  TestRedis redis;
  DqdOptions options = options_for(redis, 1, 0, 0);
  DqdProcess dqd(options);
  dqd.start();
  REQUIRE(wait_until([&] { return dq_children(dqd.pid()).size() == 2; }, 3000));
  options.workers = 2;
  options.timers = 1;
  dqd.rewrite_config(options);
  bool reloaded = wait_until(
      [&] {
        auto now = dq_children(dqd.pid());
        return now.size() == 4 && now.count("dq-server_1") && now.count("dq-timer_0");
      },
      4000);
  CHECK(reloaded);
  CHECK(logged(dqd.log_dir(), "err", "reload (config file changed)"));
  CHECK(dqd.stop() == 0);
}

TEST_CASE("SIGTERM: every child gone within the drain deadline, exit 0, pid file removed") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 2, 1, 2));
  dqd.start();
  std::map<std::string, pid_t> children;
  REQUIRE(wait_until([&] { return (children = dq_children(dqd.pid())).size() == 6; }, 3000));
  std::string pid_file = dqd.dir() + "/dqd.pid";
  CHECK(std::filesystem::exists(pid_file));
  int64_t started = dq::monotonic_ms();
  CHECK(dqd.stop(3000 + 1000) == 0);
  CHECK(dq::monotonic_ms() - started < 3000 + 1000);
  for (const auto& entry : children) {
    CAPTURE(entry.first);
    CHECK_FALSE(alive(entry.second));
  }
  CHECK_FALSE(std::filesystem::exists(pid_file));
  CHECK_FALSE(std::filesystem::exists(pid_file + ".status.json"));
}

TEST_CASE("children exit when the master is killed (no orphans)") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 1, 1, 1));
  dqd.start();
  std::map<std::string, pid_t> children;
  REQUIRE(wait_until([&] { return (children = dq_children(dqd.pid())).size() == 4; }, 3000));
  dqd.kill9();
  bool gone = wait_until(
      [&] {
        for (const auto& entry : children) {
          if (alive(entry.second)) {
            return false;
          }
        }
        return true;
      },
      4000);
  CHECK(gone);
}

TEST_CASE("a second dqd on the same pid file refuses to start") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 1, 0, 0));
  dqd.start();
  std::string output;
  int rc =
      dq::test::run_command({std::string(DQ_BUILD_DIR) + "/dqd", "-c", dqd.config_path()}, &output);
  CHECK(rc != 0);
  CHECK(output.find("another master is running (pid " + std::to_string(dqd.pid())) !=
        std::string::npos);
  CHECK(output.find(dqd.dir() + "/dqd.pid") != std::string::npos);
  // The first master is untouched.
  CHECK(dqd.running());
  CHECK(dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("a second dqd after the pid file was removed says the first still runs") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 1, 0, 0));
  dqd.start();
  std::string pid_file = dqd.dir() + "/dqd.pid";
  REQUIRE(std::filesystem::remove(pid_file));  // the lock no longer keeps a second one out
  std::string output;
  int64_t started = dq::monotonic_ms();
  int rc =
      dq::test::run_command({std::string(DQ_BUILD_DIR) + "/dqd", "-c", dqd.config_path()}, &output);
  CAPTURE(output);
  CHECK(rc == 1);
  CHECK(dq::monotonic_ms() - started < 2000);  // at once, not after waiting for a port
  CHECK(output.find("another master is running (pid " + std::to_string(dqd.pid()) + ", config " +
                    dqd.config_path()) != std::string::npos);
  CHECK(output.find("although its pid file " + pid_file + " was removed") != std::string::npos);
  CHECK(output.find("kill -TERM " + std::to_string(dqd.pid())) != std::string::npos);
  CHECK(output.find("did not stop cleanly") == std::string::npos);
  CHECK(read_logs(dqd.log_dir(), "err").find("did not stop cleanly") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(pid_file));  // the second left no empty pid file
  // The first is untouched.
  CHECK(dqd.running());
  CHECK(dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("the start log names every listener; a taken port names its key and file") {
  TestRedis redis;
  DqdOptions options = options_for(redis, 1, 0, 0);
  options.admin = true;
  DqdProcess dqd(options);
  dqd.start();
  std::string api = "127.0.0.1:" + std::to_string(dqd.http_port());
  std::string legacy = "127.0.0.1:" + std::to_string(dqd.legacy_port());
  std::string admin = "127.0.0.1:" + std::to_string(dqd.admin_port());
  CHECK(logged(dqd.log_dir(), "err",
               "config " + dqd.config_path() + ": the API (/v1, /healthz, /metrics) on " + api +
                   " ([server] listen), the legacy protocol on " + legacy +
                   " ([server] legacy_listen), the admin page on http://" + admin +
                   "/ ([admin] listen)"));

  // Another dqd whose admin port is the first one's: it does not start
  // without its page, and says which key of which file.
  TestRedis other_redis;
  DqdOptions clash = options_for(other_redis, 1, 0, 0);
  clash.extra_ini = "[admin]\nlisten = " + admin + "\n";
  DqdProcess second(clash);
  std::string output;
  int64_t started = dq::monotonic_ms();
  CHECK(dq::test::run_command({std::string(DQ_BUILD_DIR) + "/dqd", "-c", second.config_path()},
                              &output) == 1);
  CAPTURE(output);
  CHECK(dq::monotonic_ms() - started < 10000);
  CHECK(output.find("cannot start: [admin] listen = " + admin + " in " + second.config_path() +
                    ": address already in use") != std::string::npos);
  // And the API port the same way.
  clash.extra_ini = "[server]\nlisten = " + api + "\n";
  second.rewrite_config(clash);
  CHECK(dq::test::run_command({std::string(DQ_BUILD_DIR) + "/dqd", "-c", second.config_path()},
                              &output) == 1);
  CHECK(output.find("cannot start: [server] listen = " + api + " in " + second.config_path() +
                    ": address already in use") != std::string::npos);
  CHECK(dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("--test-config checks the file and exits") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 1, 0, 0));
  std::string output;
  CHECK(dq::test::run_command(
            {std::string(DQ_BUILD_DIR) + "/dqd", "-c", dqd.config_path(), "--test-config"},
            &output) == 0);
  CHECK(output.find("is valid") != std::string::npos);
  {
    std::ofstream out(dqd.config_path(), std::ios::app);
    out << "[server]\nworkerz = 2\n";
  }
  CHECK(dq::test::run_command(
            {std::string(DQ_BUILD_DIR) + "/dqd", "-c", dqd.config_path(), "--test-config"},
            &output) == 1);
  CHECK(output.find("unknown key server.workerz") != std::string::npos);
}

TEST_CASE("log files per kind per day, with the process title on each line") {
  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd(options_for(redis, 1, 1, 1));
  dqd.add_topic("logged", callback.url());
  dqd.start();
  HttpClient http;
  REQUIRE(http.post(dqd.jobs_url("logged"), Json{{"id", "log-1"}, {"body", 1}, {"delay", 0}}.dump())
              .status == 201);
  REQUIRE(callback.wait_for(1, 5000));
  std::map<std::string, pid_t> before_hup;
  REQUIRE(wait_until([&] { return (before_hup = dq_children(dqd.pid())).size() == 4; }, 5000));
  // Every child reopens its files on SIGHUP: a log file removed (as logrotate
  // would move it) is written again, and no child is killed or replaced.
  for (const auto& entry : std::filesystem::directory_iterator(dqd.log_dir())) {
    if (entry.path().filename().string().rfind("notify_", 0) == 0) {
      std::filesystem::remove(entry.path());
    }
  }
  kill(dqd.pid(), SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(dq_children(dqd.pid()) == before_hup);
  REQUIRE(http.post(dqd.jobs_url("logged"), Json{{"id", "log-2"}, {"body", 1}, {"delay", 0}}.dump())
              .status == 201);
  REQUIRE(callback.wait_for(2, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(read_logs(dqd.log_dir(), "notify").find("id=log-2") != std::string::npos);

  std::string day = [] {
    char text[16];
    time_t now = time(nullptr);
    struct tm local {};
    localtime_r(&now, &local);
    strftime(text, sizeof(text), "%Y%m%d", &local);
    return std::string(text);
  }();
  auto files = log_files(dqd.log_dir());
  CHECK(files.count("request_" + day + ".log") == 1);
  CHECK(files.count("notify_" + day + ".log") == 1);
  CHECK(files.count("err_" + day + ".log") == 1);
  CHECK(wait_until(
      [&] {
        return read_logs(dqd.log_dir(), "notify").find("[dq-consume_0 ") != std::string::npos;
      },
      2000));
  CHECK(read_logs(dqd.log_dir(), "request").find("[dq-server_0 ") != std::string::npos);
  std::string errors = read_logs(dqd.log_dir(), "err");
  CHECK(errors.find("[dq-master ") != std::string::npos);
  CHECK(errors.find("SIGHUP: log files reopened") != std::string::npos);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("dqctl status lists the master and its children") {
  TestRedis redis;
  DqdProcess dqd(options_for(redis, 1, 1, 1));
  dqd.start();
  std::map<std::string, pid_t> children;
  REQUIRE(wait_until([&] { return (children = dq_children(dqd.pid())).size() == 4; }, 3000));
  std::string dqctl = std::string(DQ_BUILD_DIR) + "/dqctl";
  std::string output;
  REQUIRE(dq::test::run_command({dqctl, "-c", dqd.config_path(), "status"}, &output) == 0);
  CHECK(output.find("master pid " + std::to_string(dqd.pid())) != std::string::npos);
  for (const auto& entry : children) {
    CAPTURE(entry.first);
    CHECK(output.find(entry.first) != std::string::npos);
    CHECK(output.find(std::to_string(entry.second)) != std::string::npos);
  }

  // A killed child shows one restart and its new pid.
  kill(children["dq-timer_0"], SIGKILL);
  REQUIRE(wait_until([&] { return dq_children(dqd.pid())["dq-timer_0"] != children["dq-timer_0"]; },
                     1000));
  REQUIRE(dq::test::run_command({dqctl, "-c", dqd.config_path(), "--json", "status"}, &output) ==
          0);
  Json status = Json::parse(output);
  CHECK(status["alive"] == true);
  CHECK(status["master_pid"] == dqd.pid());
  REQUIRE(status["children"].size() == 4);
  for (const auto& child : status["children"]) {
    CHECK(child["pid"] == dq_children(dqd.pid())[child["title"].get<std::string>()]);
    CHECK(child["restarts"] == (child["title"] == "dq-timer_0" ? 1 : 0));
  }

  CHECK(dqd.stop() == 0);
  CHECK(dq::test::run_command({dqctl, "-c", dqd.config_path(), "status"}, &output) == 3);
  CHECK(output.find("not running") != std::string::npos);
}

TEST_CASE("start_local: a loopback shard that is down gets a supervised redis-server") {
  int port = dq::test::free_port();
  DqdOptions options;
  options.shards = {"127.0.0.1:" + std::to_string(port)};
  options.extra_ini = "[redis]\nstart_local = yes\n";
  DqdProcess dqd(options);
  dqd.start();  // waits for /healthz
  dq::RedisConnection redis(dq::ShardAddress{"127.0.0.1", port, ""}, 500, 500);
  CHECK(redis.command({"PING"}).is_ok());
  CHECK(std::filesystem::exists(dqd.dir() + "/redis-" + std::to_string(port) + "/appendonlydir"));
  pid_t redis_pid = 0;
  for (const auto& child : children_of(dqd.pid())) {
    if (child.title.find("redis-server") != std::string::npos) {
      redis_pid = child.pid;
    }
  }
  CHECK(redis_pid > 0);
  // The API sees the shard up.
  CHECK(wait_until(
      [&] { return dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200; },
      3000));
  // The Redis dqd started passes its own safety check (AOF, no snapshots only).
  std::string report;
  CHECK(dq::test::run_command(
            {std::string(DQ_BUILD_DIR) + "/dqd", "--check", "-c", dqd.config_path()}, &report) ==
        0);
  CAPTURE(report);
  CHECK(report.find("ok    shard 127.0.0.1:" + std::to_string(port) + "  ") != std::string::npos);
  CHECK(dqd.stop() == 0);
  CHECK_FALSE(alive(redis_pid));
  redis.disconnect();
  CHECK_FALSE(redis.command({"PING"}).is_ok());
}

TEST_CASE("USR2 in the middle of a stream of adds and deliveries: nothing lost, nothing twice") {
  TestRedis redis;
  CallbackServer callback;
  callback.set_responder([](const dq::test::RecordedRequest&, size_t n) {
    return dq::test::CallbackAnswer{200,
                                    static_cast<int>(n % 5) * 20};  // some in flight at reload time
  });
  DqdProcess dqd(options_for(redis, 2, 1, 2));
  dqd.add_topic("stream", callback.url());
  dqd.start();
  pid_t master = dqd.pid();
  std::map<std::string, pid_t> before;
  REQUIRE(wait_until([&] { return (before = dq_children(master)).size() == 6; }, 3000));

  std::string jobs = dqd.jobs_url("stream");
  std::atomic<int> added{0};
  RequestLoop adds([jobs, &added](HttpClient& http, int n) {
    Json job{{"id", "s-" + std::to_string(n)}, {"body", n}, {"delay", 0.1}};
    bool ok = http.post(jobs, job.dump()).status == 201;
    if (ok) {
      ++added;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return ok;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  REQUIRE(kill(master, SIGUSR2) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  REQUIRE(kill(master, SIGUSR2) == 0);  // and again, while deliveries go on
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  adds.stop();
  CHECK(adds.failed() == 0);
  int total = added.load();
  REQUIRE(total > 100);

  CHECK(callback.wait_for(static_cast<size_t>(total), 15000));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a duplicate would arrive now
  std::map<std::string, int> deliveries;
  for (const auto& request : callback.requests()) {
    deliveries[request.header("x-dq-id")]++;
  }
  int missing = 0;
  int twice = 0;
  for (int n = 0; n < total; ++n) {
    auto it = deliveries.find("s-" + std::to_string(n));
    if (it == deliveries.end()) {
      ++missing;
    } else if (it->second > 1) {
      ++twice;
    }
  }
  CHECK(missing == 0);
  CHECK(twice == 0);
  CHECK(deliveries.size() == static_cast<size_t>(total));

  auto after = dq_children(master);
  CHECK(after.size() == before.size());
  for (const auto& entry : before) {
    CHECK(after[entry.first] != entry.second);
  }
  CHECK(dqd.stop() == 0);
}

namespace {

// Inodes of the sockets listening on 127.0.0.1:port (from /proc/net/tcp{,6}).
std::set<std::string> listening_inodes(int port) {
  std::set<std::string> inodes;
  char port_hex[8];
  std::snprintf(port_hex, sizeof(port_hex), ":%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(read_text(table));
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == port_hex) {
        inodes.insert(inode);
      }
    }
  }
  return inodes;
}

// What the process's descriptors point at: "socket:[123]", "/path/file", ...
std::set<std::string> open_files(pid_t pid) {
  std::set<std::string> targets;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (!error) {
      targets.insert(target);
    }
  }
  return targets;
}

bool holds_any_socket(pid_t pid, const std::set<std::string>& inodes) {
  for (const auto& target : open_files(pid)) {
    for (const auto& inode : inodes) {
      if (target == "socket:[" + inode + "]") {
        return true;
      }
    }
  }
  return false;
}

// Joins a thread when the scope ends, also when a REQUIRE throws.
struct JoinAtExit {
  std::thread* thread;
  ~JoinAtExit() {
    if (thread->joinable()) {
      thread->join();
    }
  }
};

}  // namespace

TEST_CASE("only the API servers hold the listening sockets; no child holds the pid file") {
  int redis_port = dq::test::free_port();
  DqdOptions options;
  options.shards = {"127.0.0.1:" + std::to_string(redis_port)};
  options.timers = 1;
  options.consumers = 1;
  options.extra_ini = "[redis]\nstart_local = yes\n";
  DqdProcess dqd(options);
  dqd.start();
  // server, timer, consumer, checker
  REQUIRE(wait_until([&] { return dq_children(dqd.pid()).size() == 4; }, 3000));
  std::set<std::string> sockets = listening_inodes(dqd.http_port());
  std::set<std::string> legacy = listening_inodes(dqd.legacy_port());
  REQUIRE(sockets.size() == 1);
  REQUIRE(legacy.size() == 1);
  sockets.insert(legacy.begin(), legacy.end());
  std::string pid_file = dqd.dir() + "/dqd.pid";
  CHECK(holds_any_socket(dqd.pid(), sockets));
  CHECK(open_files(dqd.pid()).count(pid_file) == 1);  // the check sees what it looks for

  std::vector<ProcInfo> children = children_of(dqd.pid());
  REQUIRE(children.size() == 5);  // server, timer, consumer, checker, redis-server
  bool saw_redis = false;
  for (const auto& child : children) {
    CAPTURE(child.title);
    saw_redis = saw_redis || child.title.find("redis-server") != std::string::npos;
    CHECK(holds_any_socket(child.pid, sockets) == (child.title == "dq-server_0"));
    CHECK(open_files(child.pid).count(pid_file) == 0);
  }
  CHECK(saw_redis);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("kill -9 of the master, three times: a new dqd serves at once, nothing lost or twice") {
  TestRedis redis;
  CallbackServer callback;
  // Jobs named *-slow-* take 1.5 s to answer: they are in flight at each kill.
  callback.set_responder([](const dq::test::RecordedRequest& request, size_t) {
    bool slow = request.header("x-dq-id").find("-slow-") != std::string::npos;
    return dq::test::CallbackAnswer{200, slow ? 1500 : 0};
  });
  DqdOptions options = options_for(redis, 2, 1, 1);
  options.drain_timeout_ms = 8000;
  // An add held by a paused Redis must outlast the restart (see below).
  options.extra_ini = "[redis]\ncommand_timeout_ms = 6000\n";
  DqdProcess dqd(options);
  {
    dq::Topic restart;
    restart.name = "restart";
    restart.callback_url = callback.url();
    restart.timeout_ms = 2500;  // lease 3.5 s: a redelivery would show within the test
    REQUIRE(dqd.registry().add_topic(restart).is_ok());
  }
  dqd.start();
  std::string jobs = dqd.jobs_url("restart");
  HttpClient http;
  std::vector<std::string> accepted;
  auto add = [&](HttpClient& client, const std::string& id, double delay_s) {
    auto result = client.post(jobs, Json{{"id", id}, {"body", id}, {"delay", delay_s}}.dump());
    if (result.status == 201) {
      accepted.push_back(id);
    }
    return result.status;
  };
  auto slow_arrived = [&](const std::string& prefix) {
    size_t n = 0;
    for (const auto& request : callback.requests()) {
      n += request.header("x-dq-id").rfind(prefix, 0) == 0 ? 1 : 0;
    }
    return n;
  };

  int64_t last_kill = 0;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    std::string tag = "r" + std::to_string(round);
    pid_t master = dqd.pid();
    std::map<std::string, pid_t> old_children;
    // two servers, timer, consumer, checker
    REQUIRE(wait_until([&] { return (old_children = dq_children(master)).size() == 5; }, 3000));
    for (int i = 0; i < 3; ++i) {
      REQUIRE(add(http, tag + "-slow-" + std::to_string(i), 0) == 201);
    }
    for (int i = 0; i < 10; ++i) {
      REQUIRE(add(http, tag + "-now-" + std::to_string(i), 0) == 201);
    }
    for (int i = 0; i < 10; ++i) {
      REQUIRE(add(http, tag + "-later-" + std::to_string(i), 0.5 + 0.1 * i) == 201);
    }
    REQUIRE(wait_until([&] { return slow_arrived(tag + "-slow-") == 3; }, 5000));

    // An add in flight in an old API server: Redis holds writes, so its
    // answer waits until after the restart. The old server must answer it,
    // while the port is already the new master's.
    std::set<std::string> old_sockets = listening_inodes(dqd.http_port());
    REQUIRE(old_sockets.size() == 1);
    redis.command({"CLIENT", "PAUSE", "10000", "WRITE"});
    std::string held_id = tag + "-held";
    std::atomic<long> held_status{-1};
    std::thread held([&] {
      HttpClient own;
      held_status = own.post(jobs, Json{{"id", held_id}, {"body", 1}, {"delay", 0}}.dump()).status;
    });
    JoinAtExit join_held{&held};
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE(held_status == -1);

    dqd.kill9();
    last_kill = dq::monotonic_ms();
    dqd.start();  // FAILs when dqd exits (e.g. "Address already in use")
    bool healthy = wait_until(
        [&] {
          return dq::test::http_request("GET", dqd.base_url() + "/healthz", "", 300).status == 200;
        },
        2000);
    CHECK(healthy);
    CHECK(dq::monotonic_ms() - last_kill <= 2000);
    // The old servers are still draining the held add, yet the port is free:
    // they released every descriptor of the listening socket at once.
    for (const auto& entry : old_children) {
      if (entry.first.rfind("dq-server_", 0) != 0) {
        continue;
      }
      CAPTURE(entry.first);
      CHECK_FALSE(holds_any_socket(entry.second, old_sockets));
    }
    CHECK(std::any_of(old_children.begin(), old_children.end(), [](const auto& entry) {
      return entry.first.rfind("dq-server_", 0) == 0 && alive(entry.second);
    }));
    redis.command({"CLIENT", "UNPAUSE"});
    HttpClient fresh;
    CHECK(add(fresh, tag + "-after", 0) == 201);
    CHECK(dq::monotonic_ms() - last_kill <= 2000 + 500);  // the pause is ours, not dqd's
    held.join();
    CHECK(held_status == 201);  // answered by the old server after the master died
    if (held_status == 201) {
      accepted.push_back(held_id);
    }

    // The old children finish (the slow callbacks answer) and exit.
    bool old_gone = wait_until(
        [&] {
          for (const auto& entry : old_children) {
            if (alive(entry.second)) {
              return false;
            }
          }
          return true;
        },
        8000);
    CHECK(old_gone);
    CHECK_FALSE(dq_children(dqd.pid()).empty());
  }

  // Every accepted job is delivered once, including the ones in flight at
  // each kill: a redelivery after their lease (3.5 s) would arrive by now.
  REQUIRE(callback.wait_for(accepted.size(), 20000));
  while (dq::monotonic_ms() < last_kill + 5000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::map<std::string, int> deliveries;
  for (const auto& request : callback.requests()) {
    deliveries[request.header("x-dq-id")]++;
  }
  CHECK(accepted.size() == 3 * (3 + 10 + 10 + 2));
  for (const auto& id : accepted) {
    CAPTURE(id);
    CHECK(deliveries[id] == 1);
  }
  CHECK(deliveries.size() == accepted.size());
  // And every outcome was recorded: no job is left in Redis.
  dq::Config config;
  config.shards = {redis.shard()};
  dq::JobStore store(config);
  for (const auto& id : accepted) {
    CAPTURE(id);
    CHECK(store.get("restart", id).status().code() == dq::Code::kNotFound);
  }
  std::string errors = read_logs(dqd.log_dir(), "err");
  CHECK(errors.find("the master died: releasing the listening sockets") != std::string::npos);
  CHECK(errors.find("stopped after its master died") != std::string::npos);
  CHECK(errors.find("did not stop cleanly") != std::string::npos);
  CHECK(dqd.stop() == 0);
}

TEST_CASE("start_local: the redis-server outlives a killed master and the next one adopts it") {
  int port = dq::test::free_port();
  DqdOptions options;
  options.shards = {"127.0.0.1:" + std::to_string(port)};
  options.extra_ini = "[redis]\nstart_local = yes\n";
  DqdProcess dqd(options);
  dqd.start();
  pid_t redis_pid = 0;
  for (const auto& child : children_of(dqd.pid())) {
    if (child.title.find("redis-server") != std::string::npos) {
      redis_pid = child.pid;
    }
  }
  REQUIRE(redis_pid > 0);
  dqd.kill9();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(alive(redis_pid));  // draining children can still record outcomes
  dqd.start();
  CHECK(wait_until(
      [&] { return dq::test::http_request("GET", dqd.base_url() + "/healthz").status == 200; },
      3000));
  CHECK(read_logs(dqd.log_dir(), "err")
            .find("adopted redis-server (pid " + std::to_string(redis_pid)) != std::string::npos);
  std::string pid_file = dqd.dir() + "/dqd.pid";
  auto status = dq::read_master_status(pid_file);
  REQUIRE(status.is_ok());
  bool listed = false;
  for (const auto& child : (*status)["children"]) {
    listed = listed || child["pid"] == redis_pid;
  }
  CHECK(listed);
  CHECK(dqd.stop() == 0);
  CHECK(wait_until([&] { return !alive(redis_pid); }, 5000));
  if (alive(redis_pid)) {
    kill(redis_pid, SIGKILL);
  }
}

TEST_CASE("a shard that holds jobs is not removed: reload and --check refuse, say how many") {
  TestRedis first;
  TestRedis second;
  CallbackServer callback;
  DqdOptions options = options_for(first, 1, 1, 1);
  options.shards = {first.address(), second.address()};
  DqdProcess dqd(options);
  dqd.add_topic("kept", callback.url());
  dqd.start();
  HttpClient http;
  const int kJobs = 200;
  std::map<std::string, int64_t> due;
  for (int n = 0; n < kJobs; ++n) {
    std::string id = "k" + std::to_string(n);
    auto added =
        http.post(dqd.jobs_url("kept"), Json{{"id", id}, {"body", n}, {"delay", 12}}.dump());
    REQUIRE(added.status == 201);
    due[id] = added.json()["due_at_ms"].get<int64_t>();
  }
  // How many the second shard holds ({dq}:counts, as dq counts them).
  int64_t on_second = 0;
  auto counts = second.command({"HVALS", dq::keys::counts()});
  for (size_t i = 0; i < counts->elements; ++i) on_second += std::atoll(counts->element[i]->str);
  REQUIRE(on_second > 0);
  std::string holds = "holds " + std::to_string(on_second) + " job(s)";

  // The second shard taken out of the list: --check and the reload refuse.
  DqdOptions without = options;
  without.shards = {first.address()};
  dqd.rewrite_config(without);
  std::string output;
  int checked = dq::test::run_command(
      {std::string(DQ_BUILD_DIR) + "/dqd", "--check", "-c", dqd.config_path()}, &output);
  CHECK_MESSAGE(checked == 1, output);
  CHECK_MESSAGE(output.find("shard " + second.address() + " is no longer listed but " + holds) !=
                    std::string::npos,
                output);
  REQUIRE(kill(dqd.pid(), SIGUSR2) == 0);
  CHECK(logged(dqd.log_dir(), "err",
               "rejected, generation 1 keeps running: shard " + second.address() +
                   " is no longer listed but " + holds));
  // Still served: every job answers GET and is delivered once, none early.
  int answered = 0;
  for (const auto& entry : due) {
    answered += http.get(dqd.jobs_url("kept") + "/" + entry.first).status == 200;
  }
  CHECK(answered == kJobs);
  REQUIRE(callback.wait_for(static_cast<size_t>(kJobs), 30000));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // a duplicate would arrive now
  std::map<std::string, int> count;
  int early = 0;
  for (const auto& request : callback.requests()) {
    std::string id = request.header("x-dq-id");
    ++count[id];
    early += request.arrived_ms < due[id];
  }
  int delivered = 0, duplicated = 0, lost = 0;
  for (const auto& entry : due) {
    delivered += count[entry.first] > 0;
    duplicated += count[entry.first] > 1 ? count[entry.first] - 1 : 0;
    lost += count[entry.first] == 0;
  }
  MESSAGE("accepted ", kJobs, " (", on_second, " on the shard taken out), delivered ", delivered,
          ", duplicated ", duplicated, ", lost ", lost, ", early ", early);
  CHECK(delivered == kJobs);
  CHECK(duplicated == 0);
  CHECK(lost == 0);
  CHECK(early == 0);

  // Drained, it may go: --check passes and the reload is taken.
  checked = dq::test::run_command(
      {std::string(DQ_BUILD_DIR) + "/dqd", "--check", "-c", dqd.config_path()}, &output);
  CHECK_MESSAGE(checked == 0, output);
  REQUIRE(kill(dqd.pid(), SIGUSR2) == 0);
  CHECK(logged(dqd.log_dir(), "err", "reload (SIGUSR2): generation 2 started", 10000));
  CHECK(dqd.stop() == 0);
}

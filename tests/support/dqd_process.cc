#include "tests/support/dqd_process.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"

namespace dq::test {
namespace {

bool wait_for_exit(pid_t pid, int timeout_ms, int* status) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid) {
      return true;
    }
    if (done < 0) {
      return true;  // not our child any more
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

DqdProcess::DqdProcess(DqdOptions options) : options_(std::move(options)) {
  dir_ = make_temp_dir("dqd-test");
  config_path_ = dir_ + "/dq.ini";
  http_port_ = free_port();
  legacy_port_ = free_port();
  while (legacy_port_ == http_port_) {
    legacy_port_ = free_port();
  }
  admin_port_ = free_port();
  while (admin_port_ == http_port_ || admin_port_ == legacy_port_) {
    admin_port_ = free_port();
  }
  write_config(options_);
}

DqdProcess::~DqdProcess() {
  if (pid_ > 0) {
    stop(5000);
  }
  registry_.reset();
  // DQ_TEST_KEEP=1 keeps the dir (config, logs) to read after a failure.
  if (std::getenv("DQ_TEST_KEEP") == nullptr) {
    remove_dir(dir_);
  }
}

void DqdProcess::write_config(const DqdOptions& options) {
  std::string shards;
  for (const auto& shard : options.shards) {
    shards += (shards.empty() ? "" : ",") + shard;
  }
  std::ofstream out(config_path_ + ".tmp");
  out << "[server]\nlisten = " << options.listen_host << ":" << http_port_
      << "\nworkers = " << options.workers
      << "\nlegacy_listen = " << (options.legacy ? "127.0.0.1:" + std::to_string(legacy_port_) : "")
      << "\n[redis]\nshards = " << shards
      << "\nstart_local = no\nconnect_timeout_ms = 500\ncommand_timeout_ms = 1000"
      << "\n[sqlite]\npath = dq.db\n[log]\ndir = log\nlevel = debug"
      << "\n[delivery]\nbackoff_unit_ms = " << options.backoff_unit_ms << "\nlease_margin_ms = 1000"
      << "\n[timer]\nprocesses = " << options.timers
      << "\n[consumer]\nprocesses = " << options.consumers
      << "\nconcurrency = " << options.consumer_concurrency
      << "\n[master]\npid_file = dqd.pid\ndrain_timeout_ms = " << options.drain_timeout_ms
      << "\nregistry_refresh_ms = " << options.registry_refresh_ms
      << "\n[admin]\nlisten = " << (options.admin ? "127.0.0.1:" + std::to_string(admin_port_) : "")
      << "\n"
      << options.extra_ini << "\n";
  out.close();
  std::rename((config_path_ + ".tmp").c_str(), config_path_.c_str());
}

void DqdProcess::rewrite_config(const DqdOptions& options) {
  options_ = options;
  write_config(options_);
}

std::string DqdProcess::base_url() const {
  return "http://" + options_.listen_host + ":" + std::to_string(http_port_);
}
std::string DqdProcess::admin_url() const {
  return "http://127.0.0.1:" + std::to_string(admin_port_);
}
std::string DqdProcess::jobs_url(const std::string& topic) const {
  return base_url() + "/v1/topics/" + topic + "/jobs";
}

std::vector<std::string> clock_ahead_wrapper(const std::string& offset) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  return {"env", std::string("ASAN_OPTIONS=") + (asan ? asan : "") + ":verify_asan_link_order=0",
          "LD_PRELOAD=/usr/$LIB/faketime/libfaketime.so.1", "FAKETIME=" + offset};
}

void DqdProcess::start() {
  REQUIRE(pid_ < 0);
  std::string binary = std::string(DQ_BUILD_DIR) + "/dqd";
  std::string log = dir_ + "/dqd.out";
  std::vector<std::string> args = options_.wrapper;
  args.insert(args.end(), {binary, "-c", config_path_});
  std::string program = args[0];
  pid_ = spawn_logged({program}, std::move(args), log);
  for (int waited = 0; waited < 10000; waited += 50) {
    if (http_request("GET", base_url() + "/healthz", "", 500).status != 0) {
      return;
    }
    if (child_exited(&pid_)) {
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      FAIL("dqd exited at start: " << text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("dqd did not answer /healthz within 10 s");
}

int DqdProcess::stop(int timeout_ms) {
  if (pid_ < 0) {
    return -1;
  }
  kill(pid_, SIGTERM);
  int status = 0;
  if (!wait_for_exit(pid_, timeout_ms, &status)) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void DqdProcess::kill9() { kill_child(&pid_); }

bool DqdProcess::running() { return !child_exited(&pid_); }

Registry& DqdProcess::registry() {
  if (!registry_) {
    auto opened = Registry::open(sqlite_path());
    REQUIRE_MESSAGE(opened.is_ok(), opened.status().message());
    registry_ = std::move(*opened);
  }
  return *registry_;
}

void DqdProcess::add_topic(const std::string& name, const std::string& callback_url,
                           int64_t default_delay_s) {
  Topic topic;
  topic.name = name;
  topic.callback_url = callback_url;
  topic.default_delay_s = default_delay_s;
  // Suites using this test retries and dead letters with receivers that fail
  // on purpose: the circuit breaker (tests/test_circuit_breaker.cc) is off.
  topic.circuit_breaker = false;
  Status status = registry().add_topic(topic);
  REQUIRE_MESSAGE(status.is_ok(), status.message());
}

int run_command(const std::vector<std::string>& argv, std::string* output) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& arg : argv) {
      args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  output->clear();
  char buffer[4096];
  ssize_t got = 0;
  while ((got = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
    output->append(buffer, static_cast<size_t>(got));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace dq::test

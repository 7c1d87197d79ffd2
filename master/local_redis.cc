// Implements LocalRedis: launching, watching and stopping local redis-servers.
#include "master/local_redis.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "common/redis_sync.h"
#include "master/child_table.h"

namespace dq {
namespace {

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

bool answers_ping(int port, const std::string& password) {
  ShardAddress address{"127.0.0.1", port, password};
  RedisConnection connection(address, 300, 500);
  auto reply = connection.command({"PING"});
  return reply.is_ok();
}

bool wait_for_exit(pid_t pid, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || done < 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

std::string find_redis_server() {
  const char* path = getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/redis-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void LocalRedis::ensure_started(const Config& config) {
  if (!config.start_local_redis) return;
  for (const auto& shard : config.shards) {
    if (!is_loopback(shard.host)) continue;
    bool ours = false;
    for (const auto& instance : instances_) ours = ours || instance.port == shard.port;
    if (ours || answers_ping(shard.port, shard.password)) continue;
    Instance instance;
    instance.port = shard.port;
    instance.password = shard.password;
    std::filesystem::path log_dir(config.log_dir);
    instance.dir = (log_dir.parent_path() / ("redis-" + std::to_string(shard.port))).string();
    std::error_code error;
    std::filesystem::create_directories(instance.dir, error);
    if (error) {
      err_log().error("[redis] start_local: cannot create {}: {}", instance.dir, error.message());
      continue;
    }
    if (launch(&instance)) {
      err_log().info(
          "[redis] start_local: started redis-server (pid {}) on 127.0.0.1:{}, data in {}",
          instance.pid, instance.port, instance.dir);
    }
    if (instance.pid > 0 || instance.respawn_at_ms >= 0) instances_.push_back(instance);
  }
}

bool LocalRedis::launch(Instance* instance) {
  std::string binary = find_redis_server();
  if (binary.empty()) {
    err_log().error(
        "[redis] start_local: shard 127.0.0.1:{} does not answer and redis-server is not "
        "installed (apt-get install redis-server); the API answers 503 until Redis is up",
        instance->port);
    return false;
  }
  std::string port = std::to_string(instance->port);
  std::vector<std::string> argv = {binary,
                                   "--port",
                                   port,
                                   "--bind",
                                   "127.0.0.1",
                                   "--dir",
                                   instance->dir,
                                   "--appendonly",
                                   "yes",
                                   "--save",
                                   "",
                                   "--logfile",
                                   instance->dir + "/redis.log"};
  if (!instance->password.empty()) {
    argv.push_back("--requirepass");
    argv.push_back(instance->password);
  }
  pid_t master = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    err_log().error("[redis] start_local: fork failed");
    return false;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != master) _exit(0);
    setpgid(0, 0);  // a terminal's Ctrl-C must not stop Redis before the children drained
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int number = 1; number < NSIG; ++number) signal(number, SIG_DFL);
    std::vector<char*> args;
    for (auto& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    execv(binary.c_str(), args.data());
    _exit(127);
  }
  instance->pid = pid;
  instance->started_at_ms = now_ms();
  instance->started_mono_ms = monotonic_ms();
  instance->respawn_at_ms = -1;
  for (int waited = 0; waited < 5000; waited += 50) {
    if (answers_ping(instance->port, instance->password)) return true;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      err_log().error("[redis] start_local: redis-server on port {} {} at start (see {}/redis.log)",
                      instance->port, describe_exit(status), instance->dir);
      instance->pid = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  err_log().error("[redis] start_local: redis-server on port {} (pid {}) does not answer after 5 s",
                  instance->port, pid);
  return true;  // keep supervising it; it may come up
}

bool LocalRedis::on_exit(pid_t pid, int wait_status) {
  for (auto& instance : instances_) {
    if (instance.pid != pid) continue;
    int64_t lived = monotonic_ms() - instance.started_mono_ms;
    instance.quick_deaths = lived < kQuickDeathMs ? instance.quick_deaths + 1 : 1;
    int64_t delay = std::max<int64_t>(respawn_delay_ms(instance.quick_deaths), 200);
    err_log().error("local redis-server on port {} (pid {}) {} after {} ms; restarting in {} ms",
                    instance.port, pid, describe_exit(wait_status), lived, delay);
    instance.pid = -1;
    instance.respawn_at_ms = monotonic_ms() + delay;
    return true;
  }
  return false;
}

void LocalRedis::tick() {
  for (auto& instance : instances_) {
    if (instance.pid > 0 || instance.respawn_at_ms < 0 || monotonic_ms() < instance.respawn_at_ms)
      continue;
    ++instance.restarts;
    if (!launch(&instance)) {
      instance.quick_deaths++;
      instance.respawn_at_ms =
          monotonic_ms() + std::max<int64_t>(respawn_delay_ms(instance.quick_deaths), 200);
    }
  }
}

void LocalRedis::stop_all(int timeout_ms) {
  for (auto& instance : instances_) {
    if (instance.pid <= 0) continue;
    kill(instance.pid, SIGTERM);
    if (!wait_for_exit(instance.pid, timeout_ms)) {
      err_log().error(
          "local redis-server on port {} (pid {}) ignored SIGTERM for {} ms; killing it",
          instance.port, instance.pid, timeout_ms);
      kill(instance.pid, SIGKILL);
      waitpid(instance.pid, nullptr, 0);
    }
    err_log().info("stopped local redis-server on port {}", instance.port);
    instance.pid = -1;
  }
  instances_.clear();
}

void LocalRedis::append_status(Json* children) const {
  for (const auto& instance : instances_) {
    children->push_back({{"role", "redis"},
                         {"index", instance.port},
                         {"title", "redis-server:" + std::to_string(instance.port)},
                         {"pid", instance.pid},
                         {"generation", 0},
                         {"started_at_ms", instance.started_at_ms},
                         {"restarts", instance.restarts},
                         {"state", instance.pid > 0 ? "running" : "respawning"}});
  }
}

}  // namespace dq

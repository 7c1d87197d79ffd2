// Implements LocalRedis: launching, watching and stopping local redis-servers.
#include "master/local_redis.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/redis/redis_sync.h"
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

// For a process that is not our child: gone, or a zombie nobody reaped yet.
bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) {
    return errno == ESRCH;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close_paren = text.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < text.size() &&
         text[close_paren + 2] == 'Z';
}

bool wait_for_exit(pid_t pid, bool adopted, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    if (adopted) {
      if (process_gone(pid)) {
        return true;
      }
    } else {
      int status = 0;
      pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid || done < 0) {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The pid of the redis-server answering on `port` when it keeps its data in
// `dir` (so a master of this config started it), else -1.
pid_t started_by_dq(int port, const std::string& password, const std::string& dir) {
  RedisConnection connection(ShardAddress{"127.0.0.1", port, password}, 300, 500);
  auto config_dir = connection.command({"CONFIG", "GET", "dir"});
  if (!config_dir.is_ok() || (*config_dir)->type != REDIS_REPLY_ARRAY ||
      (*config_dir)->elements != 2 || (*config_dir)->element[1]->str == nullptr) {
    return -1;
  }
  std::error_code error;
  auto theirs = std::filesystem::weakly_canonical((*config_dir)->element[1]->str, error);
  auto ours = std::filesystem::weakly_canonical(dir, error);
  if (error || theirs != ours) {
    return -1;
  }
  auto info = connection.command({"INFO", "server"});
  if (!info.is_ok() || (*info)->str == nullptr) {
    return -1;
  }
  std::string text = (*info)->str;
  size_t at = text.find("process_id:");
  if (at == std::string::npos) {
    return -1;
  }
  return static_cast<pid_t>(std::atol(text.c_str() + at + 11));
}

}  // namespace

std::string find_redis_server() {
  const char* path = getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/redis-server";
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

void LocalRedis::ensure_started(const Config& config) {
  if (!config.start_local_redis) {
    return;
  }
  for (const auto& shard : config.shards) {
    if (shard.cluster() || !is_loopback(shard.host)) {
      continue;  // a cluster's nodes are never started by dq
    }
    bool ours = false;
    for (const auto& instance : instances_) {
      ours = ours || instance.port == shard.port;
    }
    if (ours) {
      continue;
    }
    Instance instance;
    instance.port = shard.port;
    instance.password = shard.password;
    std::filesystem::path log_dir(config.log_dir);
    instance.dir = (log_dir.parent_path() / ("redis-" + std::to_string(shard.port))).string();
    if (answers_ping(shard.port, shard.password)) {
      pid_t left = started_by_dq(shard.port, shard.password, instance.dir);
      if (left > 0) {
        instance.pid = left;
        instance.adopted = true;
        instance.started_at_ms = now_ms();
        instance.started_mono_ms = monotonic_ms();
        instances_.push_back(instance);
        err_log().info(
            "[redis] start_local: adopted redis-server (pid {}) on 127.0.0.1:{}, data in {}, left "
            "running by a previous master",
            left, shard.port, instance.dir);
      }
      continue;  // someone else's Redis: used, never stopped by dq
    }
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
    if (instance.pid > 0 || instance.respawn_at_ms >= 0) {
      instances_.push_back(instance);
    }
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
  // appendfsync always: Redis fsyncs before it answers. With everysec a
  // kill -9 of Redis on a busy disk lost acknowledged adds (docs/RELIABILITY.md).
  std::vector<std::string> argv = {
      binary, "--port", port, "--bind", "127.0.0.1", "--dir", instance->dir, "--appendonly", "yes",
      "--appendfsync", "always", "--save", "", "--logfile", instance->dir + "/redis.log",
      // Job record buckets are compact listpacks up to ~6M pending jobs, and
      // hashtables beyond (flat cost per add); their due zsets stay listpacks
      // to ~12M: common/redis/shard_safety.cc.
      "--hash-max-listpack-entries", "128", "--hash-max-listpack-value", "512",
      "--zset-max-listpack-entries", "256"};
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
    // No PR_SET_PDEATHSIG: when the master is killed, Redis stays up for the
    // children still draining and for the next master, which adopts it.
    if (getppid() != master) {
      _exit(0);
    }
    setpgid(0, 0);  // a terminal's Ctrl-C must not stop Redis before the children drained
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int number = 1; number < NSIG; ++number) {
      signal(number, SIG_DFL);
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (auto& arg : argv) {
      args.push_back(arg.data());
    }
    args.push_back(nullptr);
    execv(binary.c_str(), args.data());
    _exit(127);
  }
  instance->pid = pid;
  instance->adopted = false;
  instance->started_at_ms = now_ms();
  instance->started_mono_ms = monotonic_ms();
  instance->respawn_at_ms = -1;
  for (int waited = 0; waited < 5000; waited += 50) {
    if (answers_ping(instance->port, instance->password)) {
      return true;
    }
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
    if (instance.pid != pid || instance.adopted) {
      continue;
    }
    exited(&instance, describe_exit(wait_status));
    return true;
  }
  return false;
}

void LocalRedis::exited(Instance* instance, const std::string& how) {
  int64_t lived = monotonic_ms() - instance->started_mono_ms;
  instance->quick_deaths = lived < kQuickDeathMs ? instance->quick_deaths + 1 : 1;
  int64_t delay = std::max<int64_t>(respawn_delay_ms(instance->quick_deaths), 200);
  err_log().error("local redis-server on port {} (pid {}) {} after {} ms; restarting in {} ms",
                  instance->port, instance->pid, how, lived, delay);
  instance->pid = -1;
  instance->adopted = false;
  instance->respawn_at_ms = monotonic_ms() + delay;
}

void LocalRedis::tick() {
  for (auto& instance : instances_) {
    if (instance.adopted && instance.pid > 0 && process_gone(instance.pid)) {
      exited(&instance, "exited");
    }
  }
  for (auto& instance : instances_) {
    if (instance.pid > 0 || instance.respawn_at_ms < 0 || monotonic_ms() < instance.respawn_at_ms) {
      continue;
    }
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
    if (instance.pid <= 0) {
      continue;
    }
    kill(instance.pid, SIGTERM);
    if (!wait_for_exit(instance.pid, instance.adopted, timeout_ms)) {
      err_log().error(
          "local redis-server on port {} (pid {}) ignored SIGTERM for {} ms; killing it",
          instance.port, instance.pid, timeout_ms);
      kill(instance.pid, SIGKILL);
      if (!instance.adopted) {
        waitpid(instance.pid, nullptr, 0);
      }
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

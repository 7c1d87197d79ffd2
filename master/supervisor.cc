// Implements the master's supervision loop (see supervisor.h).
#include "master/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/alerts/alert_outbox.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/master_status.h"
#include "common/core/shared_metrics.h"
#include "common/core/stop_flag.h"
#include "common/redis/shard_health.h"
#include "common/registry/registry.h"
#include "common/store/placement.h"     // shard_names
#include "common/store/script_calls.h"  // day_of
#include "common/store/store_upgrade.h"
#include "master/listeners.h"
#include "master/previous_master.h"
#include "master/process_title.h"
#include "master/shard_gate.h"
#include "master/systemd_notify.h"

namespace dq {
namespace {

constexpr int kLoopTickMs = 100;
// At start, how long to wait for a port still held by the API servers of a
// master that just died: they release it as soon as they see the death.
constexpr int kStartWaitInUseMs = 2000;

// This many quick deaths in a row make a crash loop, alerted once.
constexpr int kCrashLoopDeaths = 3;

// Closes the inherited sockets a role does not serve, so a dead master's
// ports are released by the children that actually serve them.
void keep_listen_sockets(ListenUse use, ListenSockets* sockets) {
  ListenSockets drop = *sockets;
  if (use == ListenUse::kApi) {
    drop.http_fd = drop.legacy_fd = -1;
    sockets->admin_fd = -1;
  } else if (use == ListenUse::kAdmin) {
    drop.admin_fd = -1;
    sockets->http_fd = sockets->legacy_fd = -1;
  } else {
    *sockets = {};
  }
  close_listen_sockets(&drop);
}

}  // namespace

Supervisor::Supervisor(Config config, PidFile* pid_file, SignalPipe* signals)
    : config_(std::move(config)),
      file_config_(config_),
      pid_file_(pid_file),
      signals_(signals),
      watch_(config_.path, kConfigSettleMs),
      master_pid_(getpid()),
      started_at_ms_(now_ms()) {
  running_text_ = watch_.handled();
}

Supervisor::~Supervisor() {
  if (getpid() == master_pid_) {
    close_listen_sockets(&sockets_);
  }
}

int Supervisor::run() {
  log_previous_master(config_.pid_file);
  auto opened = open_listeners(config_, kStartWaitInUseMs);
  if (!opened.is_ok()) {
    err_log().critical("cannot start: {}", opened.status().message());
    return 1;
  }
  sockets_ = *opened;
  local_redis_.ensure_started(config_);
  // Migrated first (the children would), so the registry's shards are read
  // from a table that has their state.
  auto registry = Registry::open(config_.sqlite_path);
  if (registry.is_ok()) {
    registry->reset();
  }
  registry_hold_.hold(config_.sqlite_path);
  config_ = shard_list_.with_registry_shards(config_);
  Status safe = check_shards_before_start(config_);
  if (!safe.is_ok()) {
    err_log().critical("cannot start: {}", safe.message());
    local_redis_.stop_all(5000);
    return 1;
  }
  // Before any role places a job by its home (common/store/store_upgrade.h);
  // a shard that cannot be upgraded now is, by the redis checker, once it can.
  Status upgraded = upgrade_stores(config_);
  if (!upgraded.is_ok()) {
    err_log().warn("{}; the redis checker tries again every 5 s", upgraded.message());
  }
  generation_ = 1;
  SharedMetrics::instance();  // mapped before the first fork, so every child shares it
  err_log().info("master started (pid {}), config {}: {}", master_pid_, config_.path,
                 describe_listeners(config_));
  spawn_generation();
  write_status();
  notify_systemd_ready("generation 1 running");

  while (!(stopping_ && table_.children().empty())) {
    struct pollfd wake {};
    wake.fd = signals_->read_fd();
    wake.events = POLLIN;
    poll(&wake, 1, kLoopTickMs);
    for (int signal_number : signals_->drain()) {
      handle_signal(signal_number);
    }
    reap();
    tick();
  }
  local_redis_.stop_all(5000);
  close_listen_sockets(&sockets_);
  unlink(master_status_path(config_.pid_file).c_str());
  unlink(shard_health_path(config_.pid_file).c_str());
  err_log().info("master stopped");
  return 0;
}

void Supervisor::spawn_generation() {
  size_t first = table_.children().size();
  for (const auto& role : all_roles()) {
    int count = role.count(config_);
    for (int index = 0; index < count; ++index) {
      Child child;
      child.role = &role;
      child.index = index;
      child.generation = generation_;
      child.title = role_title(role, index);
      table_.children().push_back(child);
    }
  }
  for (size_t slot = first; slot < table_.children().size(); ++slot) {
    spawn(slot);
  }
}

void Supervisor::spawn(size_t slot) {
  Child& child = table_.children()[slot];
  sigset_t saved;
  SignalPipe::block_all(&saved);  // the child must never run the master's handlers
  pid_t pid = fork();
  if (pid == 0) {
    run_child(child);
  }
  SignalPipe::restore(saved);
  if (pid < 0) {
    err_log().error("cannot fork {}: {}; trying again in 1 s", child.title, std::strerror(errno));
    child.respawn_at_ms = monotonic_ms() + 1000;
    return;
  }
  child.pid = pid;
  child.started_at_ms = now_ms();
  child.started_mono_ms = monotonic_ms();
  child.respawn_at_ms = -1;
  err_log().debug("started {} (pid {}, generation {})", child.title, pid, child.generation);
}

void Supervisor::run_child(const Child& child) {
  // When the master dies the children get SIGTERM: API servers release the
  // listening sockets at once, everyone finishes what it holds and exits.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != master_pid_) {
    _exit(0);  // the master died before prctl took effect
  }
  remember_master(master_pid_);
  signals_->reset_in_child();
  pid_file_->close_in_child();  // else the next master would find the lock held
  ListenSockets sockets = sockets_;
  keep_listen_sockets(child.role->listens, &sockets);
  set_process_title(child.title);
  init_logging(config_.log_dir, config_.log_level, child.title);
  const Config config = config_;
  exit(child.role->run(config, child.index, sockets));
}

void Supervisor::reap() {
  int wait_status = 0;
  pid_t pid = 0;
  while ((pid = waitpid(-1, &wait_status, WNOHANG)) > 0) {
    on_child_exit(pid, wait_status);
  }
}

void Supervisor::on_child_exit(pid_t pid, int wait_status) {
  Child* child = table_.find(pid);
  if (child == nullptr) {
    if (local_redis_.on_exit(pid, wait_status)) {
      write_status();
    }
    return;
  }
  int64_t lived = monotonic_ms() - child->started_mono_ms;
  if (child->retiring || stopping_) {
    err_log().info("{} (pid {}, generation {}) {} after {} ms", child->title, pid,
                   child->generation, describe_exit(wait_status), lived);
    table_.remove(pid);
    write_status();
    return;
  }
  child->quick_deaths = lived < kQuickDeathMs ? child->quick_deaths + 1 : 1;
  int64_t delay = respawn_delay_ms(child->quick_deaths);
  err_log().error("{} (pid {}) {} after {} ms; {}", child->title, pid, describe_exit(wait_status),
                  lived,
                  delay == 0 ? std::string("respawning now")
                             : "it keeps dying: respawning in " + std::to_string(delay) + " ms");
  child->pid = -1;
  child->respawn_at_ms = monotonic_ms() + delay;
  if (child->quick_deaths == kCrashLoopDeaths) {
    queue_crash_loop_alert(*child, wait_status);
  }
  if (delay == 0) {
    child->restarts++;
    restarts_by_role_[child->role->name]++;
    spawn(static_cast<size_t>(child - table_.children().data()));
  }
  write_status();
}

void Supervisor::queue_crash_loop_alert(const Child& child, int wait_status) {
  std::string detail = describe_exit(wait_status) + ", " + std::to_string(child.quick_deaths) +
                       " times in a row within " + std::to_string(kQuickDeathMs / 1000) +
                       " s of starting";
  Status status;
  auto outbox = AlertOutbox::open(config_.sqlite_path);
  if (outbox.is_ok()) {
    status = (*outbox)->queue(crash_loop_alert(child.title, detail, now_ms())).status();
  } else {
    status = outbox.status();
  }
  if (!status.is_ok()) {
    err_log().error("cannot queue the crash-loop alert for {}: {}", child.title, status.message());
  }
}

void Supervisor::handle_signal(int signal_number) {
  switch (signal_number) {
    case SIGCHLD:
      break;  // reap() runs after every wake-up
    case SIGTERM:
    case SIGINT:
      begin_stop(signal_number);
      break;
    case SIGHUP: {
      init_logging(config_.log_dir, config_.log_level, kMasterTitle);
      int forwarded = 0;
      for (const auto& child : table_.children()) {
        if (child.pid > 0 && child.role->reopens_logs_on_hup) {
          kill(child.pid, SIGHUP);
          ++forwarded;
        }
      }
      err_log().info("SIGHUP: log files reopened, forwarded to {} children", forwarded);
      break;
    }
    case SIGUSR2:
      if (!stopping_) {
        reload_on_signal();
      }
      break;
    default:
      break;
  }
}

void Supervisor::begin_stop(int signal_number) {
  if (stopping_) {
    err_log().warn("signal {} again while stopping: killing {} children now", signal_number,
                   table_.running());
    stop_deadline_ms_ = monotonic_ms();
    return;
  }
  stopping_ = true;
  notify_systemd_stopping();
  auto& children = table_.children();
  children.erase(std::remove_if(children.begin(), children.end(),
                                [](const Child& child) { return child.pid <= 0; }),
                 children.end());
  int64_t drain_ms = config_.drain_timeout_ms;
  for (auto& child : children) {
    kill(child.pid, SIGTERM);
    drain_ms = std::max(drain_ms, drain_ms_for(config_, child));
  }
  stop_deadline_ms_ = monotonic_ms() + drain_ms;
  err_log().info("signal {}: stopping; {} children drain for at most {} ms", signal_number,
                 children.size(), drain_ms);
  write_status();
}

void Supervisor::tick() {
  int64_t now = monotonic_ms();
  if (stopping_) {
    if (!stragglers_killed_ && now >= stop_deadline_ms_ && !table_.children().empty()) {
      for (const auto& child : table_.children()) {
        err_log().warn("{} (pid {}) still running at the drain deadline: SIGKILL", child.title,
                       child.pid);
        kill(child.pid, SIGKILL);
      }
      stragglers_killed_ = true;
    }
    return;
  }
  auto& children = table_.children();
  for (size_t slot = 0; slot < children.size(); ++slot) {
    Child& child = children[slot];
    if (child.retiring) {
      if (child.term_at_ms >= 0 && now >= child.term_at_ms) {
        kill(child.pid, SIGTERM);
        child.term_at_ms = -1;
        child.kill_at_ms = now + drain_ms_for(config_, child);
      } else if (child.kill_at_ms >= 0 && now >= child.kill_at_ms) {
        err_log().warn(
            "{} (pid {}, old generation {}) still running at the drain deadline: SIGKILL",
            child.title, child.pid, child.generation);
        kill(child.pid, SIGKILL);
        child.kill_at_ms = -1;
      }
    } else if (child.pid <= 0 && child.respawn_at_ms >= 0 && now >= child.respawn_at_ms) {
      child.restarts++;
      restarts_by_role_[child.role->name]++;
      spawn(slot);
      write_status();
    }
  }
  local_redis_.tick();
  if (now >= next_watch_ms_) {
    next_watch_ms_ = now + kConfigLookMs;
    look_at_config_file(now);
  }
  if (now >= next_shard_list_ms_) {
    next_shard_list_ms_ = now + 1000;
    if (!watch_.settling() && shard_list_.changed(config_)) {
      // The shards of the file in use: the file itself may be half-written now.
      apply_reload(ReloadCause::kShardList, "the registry's shard list changed", file_config_,
                   running_text_);
    }
  }
  if (now >= next_log_prune_ms_) {
    next_log_prune_ms_ = now + int64_t{3600} * 1000;
    int removed = remove_old_logs(config_.log_dir, config_.log_keep_days, day_of(now_ms()));
    if (removed > 0) {
      err_log().info("removed {} log files older than {} days ([log] keep_days)", removed,
                     config_.log_keep_days);
    }
  }
}

void Supervisor::write_status() {
  Json children = Json::array();
  for (const auto& child : table_.children()) {
    const char* state = child.retiring ? "retiring" : (child.pid > 0 ? "running" : "respawning");
    if (stopping_) {
      state = "stopping";
    }
    children.push_back({{"role", child.role->name},
                        {"index", child.index},
                        {"title", child.title},
                        {"pid", child.pid},
                        {"generation", child.generation},
                        {"started_at_ms", child.started_at_ms},
                        {"restarts", child.restarts},
                        {"state", state}});
  }
  local_redis_.append_status(&children);
  Json status = {{"master_pid", master_pid_},
                 {"started_at_ms", started_at_ms_},
                 {"generation", generation_},
                 {"config", config_.path},
                 {"shards", shard_names(config_.shards)},  // dqd --check: shard_removal.h
                 {"pid_file", config_.pid_file},
                 {"stopping", stopping_},
                 {"updated_at_ms", now_ms()},
                 {"children", children},
                 {"restarts_by_role", restarts_by_role_}};
  Status written = write_master_status(config_.pid_file, status);
  if (!written.is_ok()) {
    err_log().warn("{}", written.message());
  }
}

}  // namespace dq

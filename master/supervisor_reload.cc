// The Supervisor's reloads (see supervisor.h): by SIGUSR2, by a changed
// config file once it is whole and stable, and by a changed registry shard
// list; each forks a new generation and retires the old one.
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "master/config_moves.h"
#include "master/listeners.h"
#include "master/shard_gate.h"
#include "master/supervisor.h"
#include "master/systemd_notify.h"

namespace dq {

void Supervisor::use_sockets(const ListenSockets& next) {
  // The old children keep their own copies; the master drops the ones it no
  // longer hands out, before forking, so the new generation never inherits them.
  for (int ListenSockets::*fd :
       {&ListenSockets::http_fd, &ListenSockets::legacy_fd, &ListenSockets::admin_fd}) {
    if (sockets_.*fd >= 0 && sockets_.*fd != next.*fd) {
      close(sockets_.*fd);
    }
  }
  sockets_ = next;
}

void Supervisor::reload_on_signal() {
  watch_.remember_current();
  auto loaded = load_config_text(config_.path, watch_.handled());
  if (!loaded.is_ok()) {
    return reject_reload("SIGUSR2", loaded.status().message());
  }
  apply_reload(ReloadCause::kSignal, "SIGUSR2", *loaded, watch_.handled());
}

void Supervisor::reload_changed_file(const ConfigWatch::Change& change) {
  const std::string why = "config file changed";
  if (change.writes > 1) {
    err_log().info("the config file settled after {} writes in {} ms", change.writes,
                   change.settled_after_ms);
  }
  if (change.contents == running_text_) {
    err_log().info("the config file is back to the one in use: nothing to reload");
    return;
  }
  std::string incomplete = incomplete_config_reason(running_text_, change.contents);
  if (!incomplete.empty()) {
    return reject_reload(why, incomplete +
                                  ": not applied by the automatic reload; fix the file, or send "
                                  "SIGUSR2 to apply it as it is (kill -USR2 " +
                                  std::to_string(master_pid_) + ")");
  }
  auto loaded = load_config_text(config_.path, change.contents);
  if (!loaded.is_ok()) {
    return reject_reload(why, loaded.status().message());
  }
  apply_reload(ReloadCause::kFileChanged, why, *loaded, change.contents);
}

void Supervisor::reject_reload(const std::string& why, const std::string& reason) {
  err_log().error("reload ({}) rejected, generation {} keeps running: {}", why, generation_,
                  reason);
}

void Supervisor::apply_reload(ReloadCause cause, const std::string& why, const Config& loaded,
                              const std::string& file_text) {
  if (stopping_) {
    return;
  }
  ShardListWatch next_list = shard_list_;
  Config next = next_list.with_registry_shards(loaded);
  std::vector<std::string> moves = config_moves(config_, next);
  if (!moves.empty() && cause == ReloadCause::kFileChanged) {
    std::string all;
    for (const auto& move : moves) {
      all += (all.empty() ? "" : "; ") + move;
    }
    return reject_reload(
        why, all + ": not applied by the automatic reload; send SIGUSR2 to apply (kill -USR2 " +
                 std::to_string(master_pid_) + ")");
  }
  Status safe = check_shards_before_reload(config_, next);
  if (!safe.is_ok()) {
    return reject_reload(why, safe.message());
  }
  if (next.pid_file != config_.pid_file) {
    err_log().warn(
        "reload: [master] pid_file changed to {}; it takes effect only at the next start",
        next.pid_file);
    next.pid_file = config_.pid_file;
  }
  auto next_sockets = reopen_listeners(config_, sockets_, next);
  if (!next_sockets.is_ok()) {
    return reject_reload(why, next_sockets.status().message());
  }
  for (const auto& move : moves) {
    err_log().warn("reload ({}) applies a move: {}", why, move);
  }
  use_sockets(*next_sockets);
  config_ = next;
  file_config_ = loaded;
  running_text_ = file_text;
  shard_list_ = next_list;
  set_log_format(config_.log_format == "json" ? LogFormat::kJson : LogFormat::kText);
  init_logging(config_.log_dir, config_.log_level, kMasterTitle);
  next_log_prune_ms_ = 0;
  local_redis_.ensure_started(config_);
  registry_hold_.hold(config_.sqlite_path);  // a moved registry is held where it is now

  // Retire the running generation: children waiting for a respawn are simply
  // dropped, running ones get SIGTERM once the new generation had a moment.
  auto& children = table_.children();
  children.erase(
      std::remove_if(children.begin(), children.end(),
                     [](const Child& child) { return !child.retiring && child.pid <= 0; }),
      children.end());
  size_t retiring = 0;
  for (auto& child : children) {
    if (child.retiring) {
      continue;
    }
    child.retiring = true;
    child.term_at_ms = monotonic_ms() + kRetireGraceMs;
    ++retiring;
  }
  ++generation_;
  notify_systemd_reloading();
  spawn_generation();
  err_log().info(
      "reload ({}): generation {} started; {} children of the old generation finish and exit", why,
      generation_, retiring);
  write_status();
  notify_systemd_ready("generation " + std::to_string(generation_) + " running");
}

void Supervisor::look_at_config_file(int64_t now) {
  int writes_before = watch_.writes_seen();
  auto change = watch_.look(now);
  if (change) {
    reload_changed_file(*change);
    return;
  }
  if (writes_before > 0 && !watch_.settling()) {
    err_log().info("the config file is back to {}: nothing to reload",
                   watch_.handled() == running_text_ ? "the one in use" : "the one refused before");
  } else if (writes_before == 0 && watch_.writes_seen() == 1) {
    err_log().info("the config file changed; it is reloaded once it has stayed the same for {} ms",
                   kConfigSettleMs);
  } else if (writes_before == 1 && watch_.writes_seen() == 2) {
    err_log().info(
        "the config file is still being written (it changed again within {} ms): nothing is "
        "reloaded until it stays the same",
        kConfigSettleMs);
  }
}

}  // namespace dq

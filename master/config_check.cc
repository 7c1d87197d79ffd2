// Implements `dqd --check` (see config_check.h).
#include "master/config_check.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/core/config.h"
#include "common/core/master_status.h"
#include "common/redis/redis_sync.h"
#include "common/redis/shard_safety.h"
#include "common/registry/admin_users.h"
#include "common/registry/registry.h"
#include "common/registry/shard_list.h"
#include "common/store/shard_writable.h"
#include "master/shard_removal.h"

namespace dq {
namespace {

class Report {
 public:
  explicit Report(FILE* out) : out_(out) {}
  void ok(const std::string& what, const std::string& detail) {
    std::fprintf(out_, "ok    %-28s %s\n", what.c_str(), detail.c_str());
  }
  // Worth a look, but dqd runs with it.
  void warn(const std::string& what, const std::string& detail) {
    std::fprintf(out_, "warn  %-28s %s\n", what.c_str(), detail.c_str());
  }
  void fail(const std::string& what, const std::string& detail) {
    std::fprintf(out_, "FAIL  %-28s %s\n", what.c_str(), detail.c_str());
    ++failures_;
  }
  int failures() const { return failures_; }

 private:
  FILE* out_;
  int failures_ = 0;
};

void check_log_dir(const Config& config, Report& report) {
  std::error_code error;
  std::filesystem::create_directories(config.log_dir, error);
  if (error) {
    report.fail("log folder", config.log_dir + ": " + error.message());
  } else if (access(config.log_dir.c_str(), W_OK) != 0) {
    report.fail("log folder", config.log_dir + ": not writable");
  } else {
    report.ok("log folder", config.log_dir);
  }
}

// The admin page's first user comes from [admin] password_file while the
// registry has no user: that file must be readable, or dq-admin must be
// able to create it (its folder exists and is writable), else nobody can
// ever log in.
void check_admin_password(const Config& config, Report& report) {
  const char* what = "admin password file";
  if (config.admin_listen.empty() || config.admin_user.empty()) {
    return;
  }
  auto users = AdminUsers::open(config.sqlite_path);
  if (users.is_ok()) {
    auto listed = (*users)->list();
    if (listed.is_ok() && !listed->empty()) {
      report.ok(what, "not needed: the registry has " + std::to_string(listed->size()) +
                          " admin user(s)");
      return;
    }
  }
  const std::string& path = config.admin_password_file;
  std::error_code error;
  if (std::filesystem::exists(path, error)) {
    auto password = read_password_file(path);
    if (password.is_ok()) {
      report.ok(what, path + " (the first user, " + config.admin_user + ", logs in with it)");
    } else {
      report.fail(what, password.status().message() + ": nobody can log in on the admin page");
    }
    return;
  }
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (!std::filesystem::is_directory(folder, error) || access(folder.c_str(), W_OK) != 0) {
    report.fail(what, path + " does not exist and dq-admin cannot create it (" + folder +
                          (std::filesystem::is_directory(folder, error) ? " is not writable"
                                                                        : " does not exist") +
                          "): nobody could log in on the admin page; fix [admin] password_file "
                          "in " +
                          config.path +
                          ", or write a password (8 characters or more) "
                          "on the file's first line");
    return;
  }
  report.warn(what, path +
                        " does not exist yet: dq-admin creates it at start with a random "
                        "password (mode 0600), the first user " +
                        config.admin_user + "'s; read it there");
}

void check_shard(const Config& config, const ShardAddress& shard, Report& report) {
  RedisConnection connection(shard, config.redis_connect_timeout_ms,
                             config.redis_command_timeout_ms);
  std::string what = "shard " + shard.name();
  auto safety = check_shard_safety(connection, config.memory_warn_percent);
  if (!safety.is_ok()) {
    report.fail(what, "cannot reach it: " + safety.status().message());
    return;
  }
  // A replica, a full shard or one that cannot persist answers reads but
  // refuses every add.
  auto writes = check_shard_writable(connection);
  if (!writes.is_ok()) {
    report.fail(what, "cannot reach it: " + writes.status().message());
    return;
  }
  if (!writes->writable) {
    report.fail(what, writes->reason);
    return;
  }
  std::string detail =
      "persistence " + safety->persistence + ", maxmemory-policy " + safety->eviction_policy;
  if (!safety->safe() && !config.allow_unsafe_redis) {
    report.fail(what, describe_problems(*safety));
    return;
  }
  if (!safety->unsafe.empty() || !safety->warnings.empty()) {
    detail += " (" + describe_problems(*safety) + ")";
  }
  report.ok(what, detail);
  if (config.redis_wait_replicas > 0 && safety->connected_replicas < config.redis_wait_replicas) {
    report.warn(what, std::to_string(std::max(0, safety->connected_replicas)) +
                          " connected replica(s), fewer than [redis] wait_replicas = " +
                          std::to_string(config.redis_wait_replicas) +
                          ": adds will answer 504 replication_timeout until enough replicas are "
                          "connected");
  }
}

// Against a dqd running with this pid file: a shard it uses that this
// config no longer lists must hold no jobs (a reload would refuse it).
void check_removed(const Config& config, Report& report) {
  auto running = read_master_status(config.pid_file);
  const char* what = "shards no longer listed";
  int64_t pid = running.is_ok() ? running->value("master_pid", int64_t{0}) : 0;
  if (pid <= 0 || kill(static_cast<pid_t>(pid), 0) != 0 || !running->contains("shards")) {
    report.ok(what, "no running dqd (" + config.pid_file + ") to compare with");
    return;
  }
  std::string listed;
  for (const auto& name : (*running)["shards"]) {
    // Still listed: not removed (and a Sentinel-managed shard's name,
    // "sentinel://master", is not a parsable entry on its own).
    bool kept = std::any_of(
        config.shards.begin(), config.shards.end(),
        [&](const ShardAddress& shard) { return shard.name() == name.get<std::string>(); });
    if (!kept) {
      listed += (listed.empty() ? "" : ",") + name.get<std::string>();
    }
  }
  auto before = parse_shard_list(listed);
  if (!before.is_ok()) {
    report.fail(what, "the running dqd's status lists shards it cannot parse: " + listed);
    return;
  }
  Config listing = config;  // the registry's shards are listed too
  (void)merge_registry_shards(&listing);
  auto removed = removed_shards(*before, listing.shards);
  Status kept = check_removed_shards(removed, config);
  if (!kept.is_ok()) {
    report.fail(what, kept.message());
  } else {
    report.ok(what, std::to_string(removed.size()) + " against the running dqd (pid " +
                        std::to_string(pid) + ")" + (removed.empty() ? "" : ", holding no jobs"));
  }
}

}  // namespace

int run_config_check(const std::string& config_path, FILE* out) {
  Report report(out);
  auto config = load_config(config_path);
  if (!config.is_ok()) {
    report.fail("config " + config_path, config.status().message());
    return 1;
  }
  report.ok("config", config->path);
  check_log_dir(*config, report);

  auto registry = Registry::open(config->sqlite_path);
  if (!registry.is_ok()) {
    report.fail("sqlite", config->sqlite_path + ": " + registry.status().message());
  } else {
    auto topics = (*registry)->list_topics();
    if (topics.is_ok()) {
      report.ok("sqlite", config->sqlite_path + " (" + std::to_string(topics->size()) + " topics)");
    } else {
      report.fail("sqlite", config->sqlite_path + ": " + topics.status().message());
    }
  }
  check_admin_password(*config, report);
  const auto& shards = config->shards;
  if (shards.empty()) {
    report.fail("shards", "no Redis shard is configured ([redis] shards)");
  }
  for (const auto& shard : shards) {
    check_shard(*config, shard, report);
  }
  check_removed(*config, report);

  if (report.failures() == 0) {
    std::fprintf(out, "dqd --check: all checks passed\n");
    return 0;
  }
  std::fprintf(out, "dqd --check: %d problem(s)\n", report.failures());
  return 1;
}

}  // namespace dq

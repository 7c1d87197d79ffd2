// `dqctl dead ...`: browse, requeue and purge a topic's dead letters, straight
// on the Redis shards named by the config (all shards are searched).
//   dead list TOPIC [--offset N] [--limit N]
//   dead requeue TOPIC ID|--all
//   dead purge TOPIC
#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/core/json.h"
#include "common/store/dead_letters.h"
#include "common/store/job.h"
#include "common/store/job_json.h"
#include "common/store/waiting_shards.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace dead_command {

constexpr const char* kCommand = "dead";

int run_list(const CtlOptions& options, WaitingShards& shards, const std::string& topic,
             int64_t offset, int64_t limit) {
  auto dead = shards.wait<Result<DeadPage>>([&](std::function<void(Result<DeadPage>)> done) {
    dead_list(shards.set(), topic, static_cast<size_t>(offset), static_cast<size_t>(limit), done);
  });
  if (!dead.is_ok()) {
    return report_failure(dead.status());
  }
  if (options.json) {
    Json out = Json::array();
    for (const auto& job : dead->jobs) {
      out.push_back(job_to_json(job));
    }
    std::printf("%s\n", out.dump(2).c_str());
    warn_shards_not_reached(dead->unreachable_shards, "their dead letters are missing");
    return kExitOk;
  }
  std::printf("%-32s %8s  %s\n", "ID", "ATTEMPTS", "LAST ERROR");
  for (const auto& job : dead->jobs) {
    std::printf("%-32s %8d  %s\n", job.id.c_str(), job.attempts, job.last_error.c_str());
  }
  std::printf("%zu shown, %lld dead in %s\n", dead->jobs.size(),
              static_cast<long long>(dead->total), topic.c_str());
  warn_shards_not_reached(dead->unreachable_shards, "their dead letters are missing");
  return kExitOk;
}

int run_dead(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.size() < 2) {
    return usage_error(kCommand, "needs a subcommand and a TOPIC");
  }
  const std::string& sub = args[0];
  const std::string& topic = args[1];
  if (!valid_topic(topic)) {
    return usage_error(kCommand, "bad topic name '" + topic + "'");
  }

  int64_t offset = 0;
  int64_t limit = 100;
  std::string id;
  bool all = false;
  if (sub == "list") {
    for (size_t i = 2; i < args.size(); i += 2) {  // each option takes a value
      bool has_value = i + 1 < args.size();
      bool parsed = has_value &&
                    ((args[i] == "--offset" && parse_int_arg(args[i + 1], 0, 1LL << 40, &offset)) ||
                     (args[i] == "--limit" && parse_int_arg(args[i + 1], 1, 100000, &limit)));
      if (!parsed) {
        return usage_error(kCommand, "bad argument '" + args[i] + "'");
      }
    }
  } else if (sub == "requeue") {
    if (args.size() != 3) {
      return usage_error(kCommand, "dead requeue needs an ID or --all");
    }
    all = args[2] == "--all";
    if (!all) {
      id = args[2];
      if (!valid_id(id)) {
        return usage_error(kCommand, "bad job id '" + id + "'");
      }
    }
  } else if (sub == "purge") {
    if (args.size() != 2) {
      return usage_error(kCommand, "dead purge takes only a TOPIC");
    }
  } else {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }

  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  exit_code = require_known_topic(options, topic);
  if (exit_code != kExitOk) {
    return exit_code;
  }
  WaitingShards shards(config);

  if (sub == "list") {
    return run_list(options, shards, topic, offset, limit);
  }
  if (sub == "requeue") {
    auto moved = shards.wait<Result<int64_t>>([&](std::function<void(Result<int64_t>)> done) {
      dead_requeue(shards.set(), topic, id, done);
    });
    if (!moved.is_ok()) {
      return report_failure(moved.status());
    }
    if (!all && *moved == 0) {
      return report_failure(Status(Code::kNotFound, "no dead job " + topic + "/" + id));
    }
    if (options.json) {
      std::printf("%s\n", Json{{"requeued", *moved}}.dump().c_str());
    } else {
      std::printf("requeued %lld job(s) of %s\n", static_cast<long long>(*moved), topic.c_str());
    }
    return kExitOk;
  }
  auto purged = shards.wait<Result<int64_t>>(
      [&](std::function<void(Result<int64_t>)> done) { dead_purge(shards.set(), topic, done); });
  if (!purged.is_ok()) {
    return report_failure(purged.status());
  }
  if (options.json) {
    std::printf("%s\n", Json{{"purged", *purged}}.dump().c_str());
  } else {
    std::printf("purged %lld dead job(s) of %s\n", static_cast<long long>(*purged), topic.c_str());
  }
  return kExitOk;
}

constexpr const char* kUsage =
    "dead list TOPIC [--offset N] [--limit N]   (default limit 100)\n"
    "dead requeue TOPIC ID|--all\n"
    "dead purge TOPIC";
const CommandRegistration kRegistered(kCommand, kUsage, &run_dead);

}  // namespace dead_command
}  // namespace dq::ctl

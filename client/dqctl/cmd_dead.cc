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
#include "common/store/job.h"
#include "common/store/job_store.h"

namespace dq::ctl {
namespace {

constexpr const char* kCommand = "dead";
constexpr const char* kUsage =
    "dead list TOPIC [--offset N] [--limit N]   (default limit 100)\n"
    "dead requeue TOPIC ID|--all\n"
    "dead purge TOPIC";

Json dead_json(const Job& job) {
  return Json{{"topic", job.topic},
              {"id", job.id},
              {"attempts", job.attempts},
              {"due_at_ms", job.due_at_ms},
              {"created_at_ms", job.created_at_ms},
              {"last_error", job.last_error},
              {"last_error_at_ms", job.last_error_at_ms},
              {"body", job.body}};
}

int run_list(const CtlOptions& options, JobStore& store, const std::string& topic, int64_t offset,
             int64_t limit) {
  auto dead = store.dead_list(topic, static_cast<size_t>(offset), static_cast<size_t>(limit));
  if (!dead.is_ok()) {
    return report_failure(dead.status());
  }
  if (options.json) {
    Json out = Json::array();
    for (const auto& entry : *dead) {
      out.push_back(dead_json(entry.job));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  auto total = store.dead_count(topic);
  std::printf("%-32s %8s  %s\n", "ID", "ATTEMPTS", "LAST ERROR");
  for (const auto& entry : *dead) {
    std::printf("%-32s %8d  %s\n", entry.job.id.c_str(), entry.job.attempts,
                entry.job.last_error.c_str());
  }
  if (total.is_ok()) {
    std::printf("%zu shown, %lld dead in %s\n", dead->size(), static_cast<long long>(*total),
                topic.c_str());
  }
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
  JobStore store(config);

  if (sub == "list") {
    return run_list(options, store, topic, offset, limit);
  }
  if (sub == "requeue") {
    auto moved = store.dead_requeue(topic, id);
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
  auto purged = store.dead_purge(topic);
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

const CommandRegistration kRegistered(kCommand, kUsage, &run_dead);

}  // namespace
}  // namespace dq::ctl

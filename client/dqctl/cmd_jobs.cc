// `dqctl jobs list TOPIC --state S`: a registered topic's pending jobs in one
// state, next due first, straight from the Redis shards of the config
// (common/store/job_listing.h, the code behind GET /v1/topics/{t}/jobs).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/core/json.h"
#include "common/store/job_listing.h"
#include "common/store/waiting_shards.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace jobs_command {

constexpr const char* kCommand = "jobs";

struct ListArgs {
  std::string topic;
  std::optional<ListState> state;
  int64_t offset = 0;
  int64_t limit = 50;
};

// False (after printing why) on a usage error.
bool parse_list_args(const std::vector<std::string>& args, ListArgs* out) {
  auto bad = [](const std::string& message) {
    usage_error(kCommand, message);
    return false;
  };
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      if (!out->topic.empty()) {
        return bad("jobs list takes one TOPIC");
      }
      out->topic = arg;
      continue;
    }
    std::string value;
    if (!take_option(args, &i, &arg, &value)) {
      return bad(arg + " needs a value");
    }
    if (arg == "--state") {
      out->state = parse_list_state(value);
      if (!out->state) {
        return bad("--state '" + value + "' is not delayed, ready, working or retrying");
      }
    } else if (arg == "--offset") {
      if (!parse_int_arg(value, 0, 1LL << 40, &out->offset)) {
        return bad("--offset '" + value + "' is not a whole number >= 0");
      }
    } else if (arg == "--limit") {
      if (!parse_int_arg(value, 1, kMaxListLimit, &out->limit)) {
        return bad("--limit '" + value + "' is not 1.." + std::to_string(kMaxListLimit));
      }
    } else {
      return bad("unknown option " + arg);
    }
  }
  if (out->topic.empty()) {
    return bad("jobs list needs a TOPIC");
  }
  if (!out->state) {
    return bad("jobs list needs --state");
  }
  return true;
}

void print_page(const ListArgs& list, const JobPage& page) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATE", "ATTEMPTS", "DUE", "CREATED", "SHARD", "LAST ERROR"}};
  for (const ListedJob& job : page.jobs) {
    rows.push_back({job.id, job.state, std::to_string(job.attempts), format_time(job.due_ms),
                    format_time(job.created_ms), job.shard, job.last_error});
  }
  print_rows(rows);
  printf("%zu shown (from %lld), %lld %s in %s\n", page.jobs.size(),
         static_cast<long long>(list.offset), static_cast<long long>(page.total),
         list_state_name(*list.state), list.topic.c_str());
}

void warn(const JobPage& page) {
  if (page.truncated) {
    fprintf(stderr,
            "dqctl: warning: the listing stopped after %lld entries on a shard; "
            "the page may be incomplete\n",
            static_cast<long long>(kMaxExaminedPerShard));
  }
  if (!page.unreachable_shards.empty()) {
    std::string names;
    for (const auto& name : page.unreachable_shards) {
      names += (names.empty() ? "" : ", ") + name;
    }
    fprintf(stderr, "dqctl: warning: Redis shard(s) not reached, their jobs are missing: %s\n",
            names.c_str());
  }
}

int run_jobs(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.empty()) {
    return usage_error(kCommand, "missing subcommand");
  }
  if (args[0] != "list") {
    return usage_error(kCommand, "unknown subcommand '" + args[0] + "'");
  }
  ListArgs list;
  if (!parse_list_args(args, &list)) {
    return kExitUsage;
  }

  int exit_code = kExitOk;
  std::unique_ptr<Registry> registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }
  auto topic = registered_topic(*registry, list.topic);
  if (!topic.is_ok()) {
    return report_failure(topic.status());
  }
  Config config;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  WaitingShards shards(config);
  auto page = shards.wait<Result<JobPage>>([&](std::function<void(Result<JobPage>)> done) {
    list_topic_jobs(shards.set(), list.topic, *list.state, list.offset, list.limit, done);
  });
  if (!page.is_ok()) {
    return report_failure(page.status());
  }
  if (options.json) {
    Json out = to_json(*page);
    out["topic"] = list.topic;
    out["state"] = list_state_name(*list.state);
    printf("%s\n", out.dump(2).c_str());
  } else {
    print_page(list, *page);
  }
  warn(*page);
  return kExitOk;
}

constexpr const char* kUsage =
    "jobs list TOPIC --state delayed|ready|working|retrying [--offset N] [--limit N]\n"
    "          (next due first; ready in queue order, working by lease deadline;\n"
    "           default limit 50, at most 500; --json for the API's JSON)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_jobs);

}  // namespace jobs_command
}  // namespace dq::ctl

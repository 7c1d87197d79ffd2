// `dqctl jobs list TOPIC [--state S] [--id-prefix P]`: a registered topic's pending jobs in
// one state, next due first, or without --state in every state (delayed,
// ready, working, retrying: a job's way through dq), straight from the
// Redis shards of the config (common/store/job_listing.h, the code behind
// GET /v1/topics/{t}/jobs).
#include <algorithm>
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
  std::string id_prefix;  // only ids that start with it
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
        return bad("--state '" + value + "' is not delayed, ready, working, retrying or waiting");
      }
    } else if (arg == "--offset") {
      if (!parse_int_arg(value, 0, 1LL << 40, &out->offset)) {
        return bad("--offset '" + value + "' is not a whole number >= 0");
      }
    } else if (arg == "--id-prefix") {
      if (Status checked = check_id_prefix(value); !checked.is_ok()) {
        return bad("--id-prefix: " + checked.message());
      }
      out->id_prefix = value;
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
  return true;
}

constexpr ListState kEveryState[] = {ListState::kDelayed, ListState::kReady, ListState::kWorking,
                                     ListState::kRetrying, ListState::kWaiting};

Result<JobPage> one_page(WaitingShards& shards, const std::string& topic, ListState state,
                         int64_t offset, int64_t limit, const std::string& id_prefix) {
  return shards.wait<Result<JobPage>>([&](std::function<void(Result<JobPage>)> done) {
    list_topic_jobs(shards.set(), topic, state, offset, limit, id_prefix, std::move(done));
  });
}

// Every state's jobs, one state after the other, paged over the whole:
// --offset skips through delayed jobs first, then ready ones, and so on.
// `total` sums the states; `by_state` keeps each state's own.
struct AllStates {
  JobPage page;
  std::vector<std::pair<ListState, int64_t>> by_state;
};

Result<AllStates> list_every_state(WaitingShards& shards, const ListArgs& list) {
  AllStates all;
  int64_t skip = list.offset;
  for (ListState state : kEveryState) {
    int64_t room = list.limit - static_cast<int64_t>(all.page.jobs.size());
    // A page of at least one job also tells this state's total.
    auto page =
        one_page(shards, list.topic, state, skip, std::max<int64_t>(room, 1), list.id_prefix);
    if (!page.is_ok()) {
      return page.status();
    }
    if (room > 0) {
      all.page.jobs.insert(all.page.jobs.end(), page->jobs.begin(), page->jobs.end());
    }
    skip = std::max<int64_t>(0, skip - page->total);
    all.page.total += page->total;
    all.page.truncated = all.page.truncated || page->truncated;
    for (const auto& name : page->unreachable_shards) {
      auto& names = all.page.unreachable_shards;
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
    }
    all.by_state.emplace_back(state, page->total);
  }
  return all;
}

// "3 delayed, 1 ready, 0 working, 2 retrying"
std::string state_totals(const AllStates& all) {
  std::string text;
  for (const auto& [state, total] : all.by_state) {
    text += (text.empty() ? "" : ", ") + std::to_string(total) + " " + list_state_name(state);
  }
  return text;
}

void print_page(const ListArgs& list, const JobPage& page, const std::string& totals) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATE", "ATTEMPTS", "DUE", "CREATED", "SHARD", "LAST ERROR"}};
  for (const ListedJob& job : page.jobs) {
    rows.push_back({job.id, job.state, std::to_string(job.attempts), format_time(job.due_ms),
                    format_time(job.created_ms), job.shard, job.last_error});
  }
  print_rows(rows);
  printf("%zu shown (from %lld), %lld %s in %s%s\n", page.jobs.size(),
         static_cast<long long>(list.offset), static_cast<long long>(page.total),
         list.state ? list_state_name(*list.state) : "pending", list.topic.c_str(),
         totals.empty() ? "" : (" (" + totals + ")").c_str());
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
  AllStates all;
  if (list.state) {
    auto page = one_page(shards, list.topic, *list.state, list.offset, list.limit, list.id_prefix);
    if (!page.is_ok()) {
      return report_failure(page.status());
    }
    all.page = *page;
  } else {
    auto every = list_every_state(shards, list);
    if (!every.is_ok()) {
      return report_failure(every.status());
    }
    all = *every;
  }
  if (options.json) {
    Json out = to_json(all.page);
    out["topic"] = list.topic;
    if (list.state) {
      out["state"] = list_state_name(*list.state);
    } else {
      out["by_state"] = Json::object();
      for (const auto& [state, total] : all.by_state) {
        out["by_state"][list_state_name(state)] = total;
      }
    }
    printf("%s\n", out.dump(2).c_str());
  } else {
    print_page(list, all.page, state_totals(all));
  }
  warn(all.page);
  return kExitOk;
}

constexpr const char* kUsage =
    "jobs list TOPIC [--state delayed|ready|working|retrying|waiting] [--offset N] [--limit N]\n"
    "          (next due first; ready in queue order, working by lease deadline;\n"
    "           without --state every state, delayed first, then ready, working,\n"
    "           retrying; default limit 50, at most 500; --json for the API's JSON)\n"
    "          [--id-prefix P]   (only ids that start with P; the total counts\n"
    "           the matches found, within the listing's caps)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_jobs);

}  // namespace jobs_command
}  // namespace dq::ctl

// `dqctl shard ...`: the shards of the registry and of the config file
// (common/registry/shard_list.h), changed by common/registry/shard_workflow.h.
// Shared with every host when [registry] shared = yes; each host's master
// reloads its workers within seconds of a change.
//   shard list                         every shard, its state, source, jobs held and moved off
//   shard add HOST:PORT [--password P] joins, then takes the ids it is the home of
//   shard drain HOST:PORT              any host:port shard: no new job goes to it, its
//                                      jobs move to their homes
//   shard remove HOST:PORT             refused until it is drained (and out of the file)
// With --json a refusal is printed as {"error": "..."} on stdout too.
#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "client/dqctl/registry_write_ctl.h"
#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/registry/shard_list.h"
#include "common/registry/shard_workflow.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace shard_command {

constexpr const char* kCommand = "shard";

int refuse(const CtlOptions& options, const Status& status) {
  if (options.json) {
    print_json(Json{{"error", status.message()}});
  }
  return report_failure(status);
}

int list_shards(const CtlOptions& options, const Config& config,
                const std::vector<RegistryShard>& registry) {
  Json out = Json::array();
  std::vector<std::vector<std::string>> rows{{"SHARD", "STATE", "SOURCE", "JOBS", "MOVED"}};
  for (const auto& address : merged_shards(config.shards, registry)) {
    const RegistryShard* from = find_registry_shard(registry, address.name());
    auto jobs = jobs_on_shard(config, address);
    Json one{{"name", address.name()},
             {"state", from != nullptr ? shown_state(*from, now_ms()) : "active"},
             {"source", in_config_file(config, address.name()) ? "config" : "registry"},
             {"jobs", jobs.is_ok() ? Json(*jobs) : Json(nullptr)}};
    // A draining shard's progress: jobs moved off it, and JOBS still there.
    auto moved = jobs_moved_off(config, address);
    one["moved"] = moved.is_ok() ? Json(*moved) : Json(nullptr);
    if (!jobs.is_ok()) {
      one["error"] = jobs.status().message();
    }
    rows.push_back({one["name"], one["state"], one["source"],
                    jobs.is_ok() ? std::to_string(*jobs) : "?",
                    moved.is_ok() ? std::to_string(*moved) : "?"});
    out.push_back(one);
  }
  for (const auto& row : registry) {
    if (row.state == "listed") {  // from before registry shards took jobs: unused
      rows.push_back({row.address, row.state, "registry", "-", "-"});
      out.push_back(Json{{"name", row.address}, {"state", row.state}, {"source", "registry"}});
    }
  }
  if (options.json) {
    print_json(out);
  } else {
    print_rows(rows);
  }
  return kExitOk;
}

// Runs a change of common/registry/shard_workflow.h: the versioned write,
// through the shared registry when [registry] shared = yes.
Status run_change(const CtlOptions& options, Registry& registry, const Result<ShardEdit>& change) {
  if (!change.is_ok()) {
    return change.status();
  }
  if (change->unchanged) {
    return Status::ok();
  }
  return write_registry_change(options, registry, change->write);
}

int add_shard(const CtlOptions& options, Registry& registry, const Config& config,
              const std::string& address, const std::string& password) {
  auto change = plan_shard_add(config, registry, address, password);
  Status status = run_change(options, registry, change);
  if (!status.is_ok()) {
    return refuse(options, status);
  }
  if (options.json) {
    print_json(Json{{"added", address}, {"state", "joining"}});
  } else {
    printf(
        "shard %s added: every host asks it about the ids it will be the home of within "
        "seconds, places them on it 3 s later, and the checker moves the jobs whose home it "
        "became (dqctl shard list: moving, then active)\n",
        address.c_str());
  }
  return kExitOk;
}

int remove_shard(const CtlOptions& options, Registry& registry, const Config& config,
                 const std::string& address) {
  Status status = run_change(options, registry, plan_shard_remove(config, registry, address));
  if (!status.is_ok()) {
    return refuse(options, status);
  }
  if (options.json) {
    print_json(Json{{"removed", address}});
  } else {
    printf("shard %s removed\n", address.c_str());
  }
  return kExitOk;
}

int drain_shard(const CtlOptions& options, Registry& registry, const Config& config,
                const std::string& address) {
  Status status = run_change(options, registry, plan_shard_drain(config, registry, address));
  if (!status.is_ok()) {
    return refuse(options, status);
  }
  if (options.json) {
    print_json(Json{{"draining", address}});
  } else {
    printf(
        "shard %s draining: within seconds no host gives it a new job, and the checker moves "
        "its delayed and dead jobs to their homes; once it holds none it is drained (dqctl "
        "shard list shows its jobs and those moved); then remove it\n",
        address.c_str());
  }
  return kExitOk;
}

int run_shard_command(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.empty()) {
    return usage_error(kCommand, "needs list|add|drain|remove");
  }
  const std::string& sub = args[0];
  std::string address;
  std::string password;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name;
    std::string value;
    if (args[i].rfind("--", 0) == 0) {
      if (!take_option(args, &i, &name, &value) || name != "--password" || sub != "add") {
        return usage_error(kCommand, "unknown option " + args[i]);
      }
      password = value;
    } else if (address.empty()) {
      address = args[i];
    } else {
      return usage_error(kCommand, "one HOST:PORT only");
    }
  }
  if (sub == "list" ? !address.empty()
                    : (sub == "add" || sub == "remove" || sub == "drain") && address.empty()) {
    return usage_error(kCommand, sub == "list" ? "shard list takes no arguments"
                                               : "shard " + sub + " needs HOST:PORT");
  }
  if (sub != "list" && sub != "add" && sub != "remove" && sub != "drain") {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }
  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  auto registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }
  if (sub == "list") {
    auto listed = read_registry_shards(registry->db());
    if (!listed.is_ok()) {
      return refuse(options, listed.status());
    }
    return list_shards(options, config, *listed);
  }
  if (sub == "add") {
    return add_shard(options, *registry, config, address, password);
  }
  if (sub == "drain") {
    return drain_shard(options, *registry, config, address);
  }
  return remove_shard(options, *registry, config, address);
}

constexpr const char* kUsage =
    "shard list                          every shard: state, source (config|registry), jobs\n"
    "shard add HOST:PORT [--password P]  joins, then takes its share of ids; their jobs move to "
    "it\n"
    "shard drain HOST:PORT               no new job goes to it; its jobs move to their homes\n"
    "shard remove HOST:PORT              once drained (and out of every host's config file)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_shard_command);

}  // namespace shard_command
}  // namespace dq::ctl

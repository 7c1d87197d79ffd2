// `dqctl shard ...`: the registry's Redis shards (common/registry/shard_list.h),
// beside the config file's [redis] shards. Shared with every host when
// [registry] shared = yes; each host's master reloads its workers within
// seconds of a change.
//   shard list                         every shard, its state, source, jobs held and moved off
//   shard add HOST:PORT [--password P] new jobs are placed on it from then on
//   shard drain HOST:PORT              no new job goes to it (its jobs stay, delivered
//                                      from it as they come due)
//   shard remove HOST:PORT             refused while it holds a job
// With --json a refusal is printed as {"error": "..."} on stdout too.
#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "client/dqctl/registry_write_ctl.h"
#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/registry/shard_list.h"

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

const RegistryShard* find_shard(const std::vector<RegistryShard>& shards,
                                const std::string& address) {
  for (const auto& shard : shards) {
    if (shard.address == address) {
      return &shard;
    }
  }
  return nullptr;
}

ShardAddress address_of(const RegistryShard& shard) {
  ShardAddress address;
  parse_host_port(shard.address, &address.host, &address.port);
  address.password = shard.password;
  return address;
}

int list_shards(const CtlOptions& options, const Config& config,
                const std::vector<RegistryShard>& registry) {
  Json out = Json::array();
  std::vector<std::vector<std::string>> rows{{"SHARD", "STATE", "SOURCE", "JOBS", "MOVED"}};
  for (const auto& address : merged_shards(config.shards, registry)) {
    const RegistryShard* from = find_shard(registry, address.name());
    auto jobs = jobs_on_shard(config, address);
    Json one{{"name", address.name()},
             {"state", from != nullptr ? shown_state(*from, now_ms()) : "active"},
             {"source", from != nullptr ? "registry" : "config"},
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

int add_shard(const CtlOptions& options, Registry& registry, const Config& config,
              const std::vector<RegistryShard>& listed, const std::string& address,
              const std::string& password) {
  Status status = check_new_shard(config, address, password);
  if (status.is_ok() && find_shard(listed, address) != nullptr) {
    status = Status(Code::kConflict, "shard " + address + " is listed already");
  }
  RegistryShard shard{address, password, "active", 0};
  if (status.is_ok()) {
    status = check_shard_usable(config, address_of(shard));
  }
  if (status.is_ok()) {
    ObjectWrite write{find_registry_kind("shard"), address, PutMode::kCreate, std::nullopt,
                      [&] { return registry.add_extra_shard(address, password); }};
    status = write_registry_change(options, registry, write);
  }
  if (!status.is_ok()) {
    return refuse(options, status);
  }
  if (options.json) {
    print_json(Json{{"added", address}, {"state", "active"}});
  } else {
    printf("shard %s added: every host places new jobs on it within seconds\n", address.c_str());
  }
  return kExitOk;
}

int remove_shard(const CtlOptions& options, Registry& registry, const Config& config,
                 const std::vector<RegistryShard>& listed, const std::string& address) {
  const RegistryShard* from = find_shard(listed, address);
  Status status;
  if (from == nullptr) {
    bool in_file = false;
    for (const auto& shard : config.shards) {
      in_file = in_file || shard.name() == address;
    }
    status = in_file ? Status(Code::kConflict, "shard " + address +
                                                   " is in [redis] shards; remove it from the "
                                                   "config file")
                     : Status(Code::kNotFound, "shard " + address + " is not in the registry");
  } else if (from->state != "listed") {  // a listed one never took a job
    auto jobs = jobs_on_shard(config, address_of(*from));
    if (!jobs.is_ok()) {
      status =
          Status(Code::kConflict, "shard " + address + " cannot be asked whether it holds jobs (" +
                                      jobs.status().message() + "); not removed");
    } else if (*jobs > 0) {
      status =
          Status(Code::kConflict, "shard " + address + " still holds " + std::to_string(*jobs) +
                                      " job(s); drain it first; not removed");
    } else {
      status = drain_settled(config, address_of(*from));
    }
  }
  if (status.is_ok()) {
    ObjectWrite write{find_registry_kind("shard"), address, PutMode::kDelete, std::nullopt,
                      [&] { return registry.remove_extra_shard(address); }};
    status = write_registry_change(options, registry, write);
  }
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

int drain_shard(const CtlOptions& options, Registry& registry,
                const std::vector<RegistryShard>& listed, const std::string& address) {
  const RegistryShard* from = find_shard(listed, address);
  Status status;
  if (from == nullptr) {
    status = Status(Code::kNotFound, "shard " + address + " is not in the registry");
  } else if (from->state != "draining") {
    ObjectWrite write{find_registry_kind("shard"), address, PutMode::kUpdate, std::nullopt,
                      [&] { return set_registry_shard_state(registry.db(), address, "draining"); }};
    status = write_registry_change(options, registry, write);
  }
  if (!status.is_ok()) {
    return refuse(options, status);
  }
  if (options.json) {
    print_json(Json{{"draining", address}});
  } else {
    printf(
        "shard %s draining: no host gives it a new job from now on, and its delayed and dead "
        "jobs are moved to the other shards; remove it once it holds none (dqctl shard list "
        "shows its jobs and those moved)\n",
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
  auto listed = read_registry_shards(registry->db());
  if (!listed.is_ok()) {
    return refuse(options, listed.status());
  }
  if (sub == "list") {
    return list_shards(options, config, *listed);
  }
  if (sub == "add") {
    return add_shard(options, *registry, config, *listed, address, password);
  }
  if (sub == "drain") {
    return drain_shard(options, *registry, *listed, address);
  }
  return remove_shard(options, *registry, config, *listed, address);
}

constexpr const char* kUsage =
    "shard list                          every shard: state, source (config|registry), jobs\n"
    "shard add HOST:PORT [--password P]  new jobs go to it on every host within seconds\n"
    "shard drain HOST:PORT               no new job goes to it; it empties as its jobs come due\n"
    "shard remove HOST:PORT              refused while it holds a job";
const CommandRegistration kRegistered(kCommand, kUsage, &run_shard_command);

}  // namespace shard_command
}  // namespace dq::ctl

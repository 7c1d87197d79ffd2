// Implements common/registry/shard_workflow.h.
#include "common/registry/shard_workflow.h"

#include <algorithm>
#include <memory>

#include "common/core/clock.h"
#include "common/registry/registry_rows.h"
#include "common/registry/shard_list.h"
#include "common/registry/shared_registry.h"
#include "common/store/store_upgrade.h"

namespace dq {
namespace {

// A shard joining, moving in or draining: the next change waits for it.
Status no_change_under_way(const std::vector<RegistryShard>& rows, const std::string& address) {
  for (const auto& row : rows) {
    if (row.address != address && (row.state == "moving" || row.state == "draining")) {
      return Status(Code::kConflict,
                    "shard " + row.address + " is " + shown_state(row, now_ms()) +
                        " (the checker is moving the jobs whose home it changed): one change at "
                        "a time, so an id is looked for on two shards at most; retry once it is " +
                        (row.state == "moving" ? "active" : "drained") + " (dqctl shard list)");
    }
  }
  return Status::ok();
}

ShardAddress address_of(const RegistryShard& row) {
  ShardAddress address;
  parse_host_port(row.address, &address.host, &address.port);
  address.password = row.password;
  return address;
}

ShardEdit change_of(const std::string& address, PutMode mode, std::string state,
                    std::function<Status()> change) {
  ShardEdit out;
  out.write =
      ObjectWrite{find_registry_kind("shard"), address, mode, std::nullopt, std::move(change)};
  out.address = address;
  out.state = std::move(state);
  return out;
}

}  // namespace

Result<ShardEdit> plan_shard_add(const Config& config, Registry& registry,
                                 const std::string& address, const std::string& password) {
  auto rows = read_registry_shards(registry.db());
  if (!rows.is_ok()) {
    return rows.status();
  }
  Status status = check_new_shard(config, address, password);
  if (status.is_ok() && find_registry_shard(*rows, address) != nullptr) {
    status = Status(Code::kConflict, "shard " + address + " is listed already");
  }
  if (status.is_ok()) {
    status = no_change_under_way(*rows, address);
  }
  if (status.is_ok()) {
    ShardAddress shard;
    parse_host_port(address, &shard.host, &shard.port);
    shard.password = password;
    status = check_shard_usable(config, shard);
    if (status.is_ok()) {
      // Before any host places a job on it: else the first upgrade that
      // runs there takes the running dq's jobs for a stopped v3 dq's.
      RedisConnection connection(shard, config.redis_connect_timeout_ms,
                                 config.redis_command_timeout_ms);
      Status marked = mark_new_store_current(connection);
      if (!marked.is_ok()) {
        status = Status(Code::kUnavailable, "shard " + address + " cannot be reached (" +
                                                marked.message() + "); nothing was changed");
      }
    }
  }
  if (!status.is_ok()) {
    return status;
  }
  return change_of(address, PutMode::kCreate, "moving", [&registry, address, password] {
    return registry.add_extra_shard(address, password, "moving");
  });
}

Result<ShardEdit> plan_shard_drain(const Config& config, Registry& registry,
                                   const std::string& address) {
  auto rows = read_registry_shards(registry.db());
  if (!rows.is_ok()) {
    return rows.status();
  }
  const RegistryShard* row = find_registry_shard(*rows, address);
  const ShardAddress* from_file = nullptr;
  for (const auto& shard : config.shards) {
    if (shard.name() == address && in_config_file(config, address)) {
      from_file = &shard;
    }
  }
  if (row == nullptr && from_file == nullptr) {
    return Status(Code::kNotFound, "shard " + address + " is not listed");
  }
  if (row != nullptr && (row->state == "draining" || row->state == "drained")) {
    ShardEdit same;
    same.address = address;
    same.state = row->state;
    same.unchanged = true;
    return same;
  }
  if (row != nullptr && row->state == "moving") {
    return Status(Code::kConflict, "shard " + address + " is " + shown_state(*row, now_ms()) +
                                       ": drain it once it is active (dqctl shard list)");
  }
  if (row != nullptr && row->state == "listed") {
    return Status(Code::kConflict,
                  "shard " + address + " is only listed (it never took jobs): remove it instead");
  }
  if (row == nullptr && (from_file->is_sentinel() || from_file->cluster())) {
    return Status(Code::kInvalid, "shard " + address +
                                      " is not a host:port shard: a Sentinel-managed shard or a "
                                      "cluster keeps its jobs through failovers and slot moves; "
                                      "only host:port shards are drained");
  }
  Status status = no_change_under_way(*rows, address);
  if (!status.is_ok()) {
    return status;
  }
  // Another shard must still take new jobs once this one stops.
  bool other_takes = false;
  for (const auto& shard : config.shards) {
    auto role = config.shard_roles.find(shard.name());
    bool active = role == config.shard_roles.end() || role->second == ShardRole::kActive;
    other_takes = other_takes || (shard.name() != address && active);
  }
  if (!other_takes) {
    return Status(Code::kConflict, "shard " + address +
                                       " is the last shard that takes new jobs: add another "
                                       "before draining it");
  }
  if (row != nullptr) {
    return change_of(address, PutMode::kUpdate, "draining", [&registry, address] {
      return set_registry_shard_state(registry.db(), address, "draining");
    });
  }
  std::string password = from_file->password;
  return change_of(address, PutMode::kCreate, "draining", [&registry, address, password] {
    return registry.add_extra_shard(address, password, "draining");
  });
}

Result<ShardEdit> plan_shard_remove(const Config& config, Registry& registry,
                                    const std::string& address) {
  auto rows = read_registry_shards(registry.db());
  if (!rows.is_ok()) {
    return rows.status();
  }
  const RegistryShard* row = find_registry_shard(*rows, address);
  bool file = in_config_file(config, address);
  if (row == nullptr) {
    return file ? Status(Code::kConflict, "shard " + address +
                                              " is in [redis] shards: drain it, then remove it "
                                              "from the config file of every host")
                : Status(Code::kNotFound, "shard " + address + " is not in the registry");
  }
  if (row->state != "listed") {  // a listed one never took a job
    if (file) {
      return Status(
          Code::kConflict,
          "shard " + address + " is in [redis] shards of this host's config file: it " +
              (row->state == "drained" ? "stays drained" : "drains and then stays drained") +
              " until it is removed from the config file of every host; remove it here "
              "after that");
    }
    auto jobs = jobs_on_shard(config, address_of(*row));
    if (!jobs.is_ok()) {
      return Status(Code::kConflict, "shard " + address +
                                         " cannot be asked whether it holds jobs (" +
                                         jobs.status().message() + "); not removed");
    }
    if (*jobs > 0) {
      return Status(Code::kConflict, "shard " + address + " still holds " + std::to_string(*jobs) +
                                         " job(s); drain it first; not removed");
    }
    // The checker makes a shard drained only once it drained long enough.
    Status settled =
        row->state == "drained" ? Status::ok() : drain_settled(config, address_of(*row));
    if (!settled.is_ok()) {
      return settled;
    }
  }
  return change_of(address, PutMode::kDelete, "",
                   [&registry, address] { return registry.remove_extra_shard(address); });
}

Status settle_shard_change(const Config& config, const std::string& address,
                           const std::string& from, const std::string& to) {
  auto registry = Registry::open(config.sqlite_path);
  if (!registry.is_ok()) {
    return registry.status();
  }
  auto rows = read_registry_shards((*registry)->db());
  if (!rows.is_ok()) {
    return rows.status();
  }
  const RegistryShard* row = find_registry_shard(*rows, address);
  if (row == nullptr || row->state != from) {
    return Status::ok();  // removed or changed meanwhile: nothing to end
  }
  sqlite3* db = (*registry)->db();
  ObjectWrite write{find_registry_kind("shard"), address, PutMode::kUpdate, std::nullopt,
                    [db, address, to] { return set_registry_shard_state(db, address, to); }};
  std::unique_ptr<SharedRegistry> shared;
  if (config.shared_registry) {
    shared = std::make_unique<SharedRegistry>(config);
  }
  return write_registry_object(db, shared.get(), write).status();
}

}  // namespace dq

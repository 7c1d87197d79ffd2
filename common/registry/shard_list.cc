// Implements common/registry/shard_list.h.
#include "common/registry/shard_list.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "common/core/clock.h"
#include "common/redis/redis_sync.h"
#include "common/redis/shard_safety.h"
#include "common/store/keys.h"
#include "common/store/placement.h"  // shard_names

namespace dq {

Result<std::vector<RegistryShard>> read_registry_shards(sqlite3* db) {
  auto stmt = Statement::prepare(
      db,
      "SELECT address, password, state, created_at_ms, changed_at_ms FROM shards "
      "WHERE enabled = 1 ORDER BY created_at_ms, address");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->rows([](const Statement& row) {
    RegistryShard shard;
    row.read(&shard.address, &shard.password, &shard.state, &shard.created_at_ms,
             &shard.changed_at_ms);
    return shard;
  });
}

Result<std::vector<RegistryShard>> read_registry_shards(const std::string& sqlite_path) {
  std::error_code error;
  if (!std::filesystem::exists(sqlite_path, error)) {
    return std::vector<RegistryShard>{};  // no registry yet: no shard in it
  }
  auto db = open_sqlite(sqlite_path);
  if (!db.is_ok()) {
    return db.status();
  }
  return read_registry_shards(db->get());
}

const RegistryShard* find_registry_shard(const std::vector<RegistryShard>& rows,
                                         const std::string& address) {
  for (const auto& row : rows) {
    if (row.address == address) {
      return &row;
    }
  }
  return nullptr;
}

bool in_config_file(const Config& config, const std::string& address) {
  const auto& file = config.file_shards;
  return std::find(file.begin(), file.end(), address) != file.end();
}

std::vector<ShardAddress> merged_shards(const std::vector<ShardAddress>& file,
                                        const std::vector<RegistryShard>& registry) {
  std::vector<ShardAddress> out = file;
  for (const auto& shard : registry) {
    if (shard.state == "listed") {
      continue;  // from before registry shards took jobs
    }
    ShardAddress address;
    if (!parse_host_port(shard.address, &address.host, &address.port)) {
      continue;  // refused when added; never from a peer's copy either
    }
    address.password = shard.password;
    bool listed = false;
    for (const auto& have : out) {
      listed = listed || have.name() == address.name();
    }
    if (!listed) {
      out.push_back(address);
    }
  }
  return out;
}

ShardRole shard_role(const RegistryShard& shard, int64_t now_ms) {
  bool first_seconds = now_ms < shard.changed_at_ms + kShardJoinMs;
  if (shard.state == "moving") {
    return first_seconds ? ShardRole::kJoining : ShardRole::kMovingIn;
  }
  if (shard.state == "draining") {
    return first_seconds ? ShardRole::kLeaving : ShardRole::kDraining;
  }
  if (shard.state == "drained") {
    return ShardRole::kDrained;
  }
  return ShardRole::kActive;
}

std::string shown_state(const RegistryShard& shard, int64_t now_ms) {
  switch (shard_role(shard, now_ms)) {
    case ShardRole::kJoining:
      return "joining";
    case ShardRole::kMovingIn:
      return "moving";
    case ShardRole::kLeaving:
    case ShardRole::kDraining:
      return "draining";
    case ShardRole::kDrained:
      return "drained";
    case ShardRole::kActive:
      break;
  }
  return shard.state == "listed" ? "listed" : "active";
}

void apply_registry_shards(const std::vector<RegistryShard>& registry, int64_t now_ms,
                           Config* config) {
  config->file_shards = shard_names(config->shards);
  config->shards = merged_shards(config->shards, registry);
  config->shard_roles.clear();
  for (const auto& shard : registry) {
    ShardRole role = shard_role(shard, now_ms);
    if (shard.state != "listed" && role != ShardRole::kActive) {
      config->shard_roles[shard.address] = role;
    }
  }
}

Status merge_registry_shards(Config* config) {
  auto registry = read_registry_shards(config->sqlite_path);
  if (!registry.is_ok()) {
    return registry.status();
  }
  apply_registry_shards(*registry, now_ms(), config);
  return Status::ok();
}

Status check_new_shard(const Config& config, const std::string& address,
                       const std::string& password) {
  std::string host;
  int port = 0;
  if (!parse_host_port(address, &host, &port) || host.find_first_of(" \t/,") != std::string::npos) {
    return Status(Code::kInvalid, "address: '" + address + "' is not host:port");
  }
  if (password.find_first_of(",\r\n") != std::string::npos) {
    return Status(Code::kInvalid, "password: must not contain a comma or a line break");
  }
  for (const auto& shard : config.shards) {
    if (shard.name() == address) {
      return Status(Code::kConflict, "shard " + address + " is listed already");
    }
  }
  return Status::ok();
}

Status set_registry_shard_state(sqlite3* db, const std::string& address, const std::string& state) {
  if (state != "moving" && state != "active" && state != "draining" && state != "drained") {
    return Status(Code::kInvalid, "state: moving, active, draining or drained");
  }
  auto stmt =
      Statement::prepare(db, "UPDATE shards SET state = ?2, changed_at_ms = ?3 WHERE address = ?1",
                         address, state, now_ms());
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->run_changing("shard " + address + " is not in the registry");
}

Status check_shard_usable(const Config& config, const ShardAddress& shard) {
  RedisConnection connection(shard, config.redis_connect_timeout_ms,
                             config.redis_command_timeout_ms);
  auto safety = check_shard_safety(connection, config.memory_warn_percent);
  if (!safety.is_ok()) {
    return Status(Code::kUnavailable, "shard " + shard.name() + " cannot be reached (" +
                                          safety.status().message() + "); nothing was changed");
  }
  if (!safety->unsafe.empty() && !config.allow_unsafe_redis) {
    std::string problems;
    for (const auto& problem : safety->unsafe) {
      problems += (problems.empty() ? "" : "; ") + problem;
    }
    return Status(Code::kInvalid, "shard " + shard.name() + " would silently drop jobs: " +
                                      problems + " (or set allow_unsafe = yes in [redis])");
  }
  return Status::ok();
}

Result<int64_t> jobs_on_shard(const Config& config, const ShardAddress& shard) {
  RedisConnection connection(shard, config.redis_connect_timeout_ms,
                             config.redis_command_timeout_ms);
  auto replies = connection.command_all({{"HVALS", keys::counts()},
                                         {"HLEN", keys::moving()},
                                         {"SCARD", keys::awaited()},
                                         {"ZCARD", keys::dep_outbox()},
                                         {"ZCARD", keys::dead_callbacks()}});
  auto& reply = replies[0];
  if (!reply.is_ok()) {
    return reply.status();
  }
  for (size_t i = 1; i < replies.size(); ++i) {
    if (!replies[i].is_ok()) {
      return replies[i].status();
    }
  }
  if ((*reply)->type != REDIS_REPLY_ARRAY) {
    return Status(Code::kInternal, "unexpected reply to HVALS " + keys::counts());
  }
  int64_t total = 0;
  for (size_t i = 0; i < (*reply)->elements; ++i) {
    const redisReply* value = (*reply)->element[i];
    int64_t n = 0;
    if (value->type == REDIS_REPLY_STRING) {
      std::from_chars(value->str, value->str + value->len, n);
    }
    total += n > 0 ? n : 0;
  }
  // A move that has not ended (checker/shard_mover.h) is counted above while
  // the job is here; one whose job was deleted meanwhile still has a copy to
  // drop on its target: the shard is not empty before its mark is cleared.
  // Nor while jobs elsewhere are registered here as waited for (the mover
  // carries them to their job's home), an ended job's event is not yet
  // handed to its waiters (the releaser: dropped, a waiting job would wait
  // for good), or a dead letter's callback is not yet sent.
  for (size_t i = 1; total == 0 && i < replies.size(); ++i) {
    if ((*replies[i])->type == REDIS_REPLY_INTEGER) {
      total = (*replies[i])->integer;
    }
  }
  return total;
}

Status drain_settled(const Config& config, const ShardAddress& shard) {
  RedisConnection connection(shard, config.redis_connect_timeout_ms,
                             config.redis_command_timeout_ms);
  auto replies = connection.command_all({{"GET", keys::draining_since()}, {"TIME"}});
  for (auto& reply : replies) {
    if (!reply.is_ok()) {
      return Status(Code::kConflict, "shard " + shard.name() +
                                         " cannot be asked how long it has drained (" +
                                         reply.status().message() + "); not removed");
    }
  }
  const redisReply* since = replies[0]->get();
  const redisReply* time = replies[1]->get();
  if (since->type != REDIS_REPLY_STRING) {
    return Status(Code::kConflict,
                  "shard " + shard.name() +
                      " is not draining yet (no mover has seen it draining): drain it, then "
                      "remove it once it is empty; not removed");
  }
  int64_t since_ms = 0;
  int64_t now_s = 0;
  std::from_chars(since->str, since->str + since->len, since_ms);
  if (time->type == REDIS_REPLY_ARRAY && time->elements == 2) {
    const redisReply* seconds = time->element[0];
    std::from_chars(seconds->str, seconds->str + seconds->len, now_s);
  }
  int64_t left_ms = since_ms + kDrainSettleMs - now_s * 1000;
  if (left_ms > 0) {
    return Status(Code::kConflict, "shard " + shard.name() + " started draining less than " +
                                       std::to_string(kDrainSettleMs / 1000) +
                                       " s ago and a host may still place jobs on it: remove it "
                                       "in " +
                                       std::to_string((left_ms + 999) / 1000) + " s; not removed");
  }
  return Status::ok();
}

Result<int64_t> jobs_moved_off(const Config& config, const ShardAddress& shard) {
  RedisConnection connection(shard, config.redis_connect_timeout_ms,
                             config.redis_command_timeout_ms);
  auto reply = connection.command({"GET", keys::moved_out()});
  if (!reply.is_ok()) {
    return reply.status();
  }
  int64_t moved = 0;
  if ((*reply)->type == REDIS_REPLY_STRING) {
    std::from_chars((*reply)->str, (*reply)->str + (*reply)->len, moved);
  }
  return moved;
}

}  // namespace dq

// Implements common/registry/shard_list.h.
#include "common/registry/shard_list.h"

#include <charconv>

#include "common/redis/redis_sync.h"
#include "common/redis/shard_safety.h"
#include "common/store/keys.h"

namespace dq {

Result<std::vector<RegistryShard>> read_registry_shards(sqlite3* db) {
  auto stmt = Statement::prepare(
      db,
      "SELECT address, password, state, created_at_ms FROM shards WHERE enabled = 1 "
      "ORDER BY created_at_ms, address");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->rows([](const Statement& row) {
    RegistryShard shard;
    shard.address = row.column_text(0);
    shard.password = row.column_text(1);
    shard.state = row.column_text(2);
    shard.created_at_ms = row.column_int(3);
    return shard;
  });
}

Result<std::vector<RegistryShard>> read_registry_shards(const std::string& sqlite_path) {
  auto db = open_sqlite(sqlite_path);
  if (!db.is_ok()) {
    return db.status();
  }
  return read_registry_shards(db->get());
}

std::vector<ShardAddress> merged_shards(const std::vector<ShardAddress>& file,
                                        const std::vector<RegistryShard>& registry) {
  std::vector<ShardAddress> out = file;
  for (const auto& shard : registry) {
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

Status merge_registry_shards(Config* config) {
  auto registry = read_registry_shards(config->sqlite_path);
  if (!registry.is_ok()) {
    return registry.status();
  }
  config->shards = merged_shards(config->shards, *registry);
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
  auto reply = connection.command({"HVALS", keys::counts()});
  if (!reply.is_ok()) {
    return reply.status();
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
  return total;
}

}  // namespace dq

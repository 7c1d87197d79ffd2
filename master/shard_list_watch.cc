// Implements master/shard_list_watch.h.
#include "master/shard_list_watch.h"

#include "common/core/clock.h"
#include "common/core/log.h"

namespace dq {
namespace {

constexpr int64_t kRetryRefusedMs = 30000;

// The shards, their passwords and their roles in placement, as one text.
std::string shard_list_text(const Config& config) {
  std::string text;
  for (const auto& shard : config.shards) {
    text += shard.name() + ":" + shard.password + ",";
  }
  for (const auto& [name, role] : config.shard_roles) {
    text += " " + name + "=" + std::to_string(static_cast<int>(role));
  }
  return text;
}

}  // namespace

void ShardListWatch::read_registry() {
  auto read = read_registry_shards(sqlite_path_);
  if (!read.is_ok()) {
    read_errors_.note("cannot read the registry's shards (" + read.status().message() +
                      "); the shard list is kept");
    return;
  }
  read_errors_.clear();
  registry_ = *read;
}

Config ShardListWatch::merged(Config config) const {
  config.shards = file_shards_;
  apply_registry_shards(registry_, now_ms(), &config);
  return config;
}

Config ShardListWatch::with_registry_shards(Config loaded) {
  sqlite_path_ = loaded.sqlite_path;
  file_shards_ = loaded.shards;
  read_registry();
  return merged(std::move(loaded));
}

bool ShardListWatch::changed(const Config& running) {
  read_registry();
  std::string wanted = shard_list_text(merged(running));
  if (wanted == shard_list_text(running)) {
    return false;
  }
  if (wanted == tried_ && monotonic_ms() < tried_at_ms_ + kRetryRefusedMs) {
    return false;
  }
  tried_ = wanted;
  tried_at_ms_ = monotonic_ms();
  return true;
}

}  // namespace dq

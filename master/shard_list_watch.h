// ShardListWatch: the master's view of the shard list its children get:
// the config file's [redis] shards plus the registry's
// (common/registry/shard_list.h), read again every second so a shard added,
// drained or removed on any host reloads this host's children.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/registry/shard_list.h"

namespace dq {

class ShardListWatch {
 public:
  // `loaded` as read from the config file, with the registry's shards as
  // they are now; remembers the file's shards for changed().
  Config with_registry_shards(Config loaded);
  // Whether the list the children would get now differs from `running`'s
  // and was not just tried: a list a reload refused (a removed shard that
  // still holds jobs) is tried again every 30 s, not every second.
  bool changed(const Config& running);

 private:
  void read_registry();
  Config merged(Config config) const;

  std::string sqlite_path_;
  std::vector<RegistryShard> registry_;
  RepeatLog read_errors_{spdlog::level::warn};  // once, then with a count
  std::vector<ShardAddress> file_shards_;
  std::string tried_;
  int64_t tried_at_ms_ = 0;
};

}  // namespace dq

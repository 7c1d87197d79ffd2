// TopicCache: a process-local snapshot of the registry's topics. Each role
// calls refresh() on its own schedule ([master] registry_refresh_ms), so
// topics added, edited or taken offline reach running children without a
// restart. Not thread-safe: one cache per thread that needs it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq {

class TopicCache {
 public:
  explicit TopicCache(std::string sqlite_path);

  // Re-reads the registry when another connection wrote it since the last
  // read. On error the last good snapshot stays in use.
  Status refresh();
  // refresh() when the snapshot is older than interval_ms (monotonic clock).
  void refresh_if_older(int64_t interval_ms);

  const Topic* find(const std::string& name) const;  // nullptr when unknown
  // find(), but a name the snapshot does not know triggers a refresh first
  // (at most every min_age_ms), so a topic added a moment ago is found.
  const Topic* find_or_reload(const std::string& name, int64_t min_age_ms = 200);
  std::vector<Topic> online() const;
  const std::map<std::string, Topic>& all() const { return topics_; }

 private:
  std::string sqlite_path_;
  std::unique_ptr<Registry> registry_;
  std::map<std::string, Topic> topics_;
  int64_t refreshed_at_ms_ = -1;
  int64_t read_at_data_version_ = -1;  // of registry_ when topics_ was read
};

}  // namespace dq

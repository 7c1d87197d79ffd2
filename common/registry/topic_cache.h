// TopicCache: a process-local snapshot of the registry's topics. Each role
// calls refresh() on its own schedule ([master] registry_refresh_ms), so
// topics added, edited or taken offline reach running children without a
// restart. Each refresh also looks at the file itself
// (common/registry/registry_file.h): a file deleted or replaced under dq
// leaves the snapshot in use, logged (once, then with a count) and reported
// by file_problem(). Not thread-safe: one cache per thread that needs it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/core/repeat_log.h"
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
  // "" while the registry file is in place and open; else what happened to it.
  const std::string& file_problem() const { return file_problem_; }
  const std::string& sqlite_path() const { return sqlite_path_; }

 private:
  // False (and file_problem_ set) when the file was deleted or replaced:
  // the snapshot stays.
  bool follow_file();

  std::string sqlite_path_;
  std::unique_ptr<Registry> registry_;
  std::map<std::string, Topic> topics_;
  int64_t refreshed_at_ms_ = -1;
  int64_t read_at_data_version_ = -1;  // of registry_ when topics_ was read
  std::string file_problem_;
  RepeatLog file_log_;                          // the problem, once, then with a count
  RepeatLog refresh_log_{spdlog::level::warn};  // a refresh that fails
};

}  // namespace dq

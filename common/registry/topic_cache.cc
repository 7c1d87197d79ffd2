#include "common/registry/topic_cache.h"

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/registry/registry_file.h"

namespace dq {

TopicCache::TopicCache(std::string sqlite_path) : sqlite_path_(std::move(sqlite_path)) {}

bool TopicCache::follow_file() {
  FileFate fate = file_fate(registry_->db());
  if (fate == FileFate::kInPlace) {
    file_problem_.clear();
    return true;
  }
  file_problem_ = file_fate_message(fate, sqlite_path_);
  file_log_.note(file_problem_ + " (" + std::to_string(topics_.size()) + " topics served)");
  return false;
}

Status TopicCache::refresh() {
  refreshed_at_ms_ = monotonic_ms();
  if (registry_ && !follow_file()) {
    return Status::ok();  // said by follow_file(); the snapshot stays
  }
  if (!registry_) {
    auto opened = Registry::open(sqlite_path_);
    if (!opened.is_ok()) {
      file_problem_ = opened.status().message();  // e.g. gone: not created again
      return opened.status();
    }
    registry_ = std::move(*opened);
    file_problem_.clear();
  }
  // PRAGMA data_version changes when another connection wrote the file: an
  // unchanged file is not read again, so refreshing often costs little.
  auto version = pragma_int(registry_->db(), "PRAGMA data_version");
  if (version.is_ok() && *version == read_at_data_version_) {
    return Status::ok();
  }
  auto topics = registry_->list_topics();
  if (!topics.is_ok()) {
    registry_.reset();  // reopen next time (the file may have been replaced)
    read_at_data_version_ = -1;
    return topics.status();
  }
  std::map<std::string, Topic> fresh;
  for (auto& topic : *topics) {
    std::string name = topic.name;
    fresh.emplace(std::move(name), std::move(topic));
  }
  topics_.swap(fresh);
  read_at_data_version_ = version.is_ok() ? *version : -1;
  return Status::ok();
}

void TopicCache::refresh_if_older(int64_t interval_ms) {
  if (refreshed_at_ms_ >= 0 && monotonic_ms() - refreshed_at_ms_ < interval_ms) {
    return;
  }
  Status status = refresh();
  if (!status.is_ok()) {
    // Once, then with a count (a corrupt file fails every refresh).
    refresh_log_.note("cannot read the topics from " + sqlite_path_ + " (serving the " +
                      std::to_string(topics_.size()) + " read before): " + status.message());
  } else if (refresh_log_.clear()) {
    err_log().info("topics read from {} again", sqlite_path_);
  }
}

const Topic* TopicCache::find(const std::string& name) const {
  auto it = topics_.find(name);
  return it == topics_.end() ? nullptr : &it->second;
}

const Topic* TopicCache::find_or_reload(const std::string& name, int64_t min_age_ms) {
  const Topic* topic = find(name);
  if (topic == nullptr) {
    refresh_if_older(min_age_ms);
    topic = find(name);
  }
  return topic;
}

std::vector<Topic> TopicCache::online() const {
  std::vector<Topic> result;
  for (const auto& entry : topics_) {
    if (entry.second.online) {
      result.push_back(entry.second);
    }
  }
  return result;
}

}  // namespace dq

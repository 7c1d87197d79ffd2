// Tests wait on the asynchronous operator reads and actions of common/store/
// (stats, listings, dead letters) through these: each opens a private loop
// with its own connections to the store's shards (common/store/waiting_shards.h)
// and runs the one production implementation until it answers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/store/dead_letters.h"
#include "common/store/job_listing.h"
#include "common/store/job_store.h"
#include "common/store/topic_stats.h"
#include "common/store/waiting_shards.h"

namespace dq::test {

inline constexpr int kReadConnectMs = 300;
inline constexpr int kReadTimeoutMs = 2000;

template <typename T>
T wait_on(const std::vector<ShardAddress>& shards,
          const std::function<void(const ShardSet&, std::function<void(T)>)>& start) {
  WaitingShards waiting(shards, kReadConnectMs, kReadTimeoutMs);
  return waiting.wait<T>([&](std::function<void(T)> done) { start(waiting.set(), done); });
}

inline Result<TopicStats> topic_stats(JobStore& store, const std::string& topic,
                                      bool with_series = true) {
  return wait_on<Result<TopicStats>>(store.addresses(), [&](const ShardSet& set, auto done) {
    dq::topic_stats(set, topic, with_series, done);
  });
}

inline Result<std::vector<TopicStats>> all_topic_stats(JobStore& store,
                                                       const std::vector<std::string>& topics,
                                                       bool with_series = false) {
  return wait_on<Result<std::vector<TopicStats>>>(
      store.addresses(),
      [&](const ShardSet& set, auto done) { dq::all_topic_stats(set, topics, with_series, done); });
}

inline Result<JobPage> list_topic_jobs(JobStore& store, const std::string& topic, ListState state,
                                       int64_t offset, int64_t limit,
                                       const std::string& id_prefix = "") {
  return wait_on<Result<JobPage>>(store.addresses(), [&](const ShardSet& set, auto done) {
    dq::list_topic_jobs(set, topic, state, offset, limit, id_prefix, done);
  });
}

inline Result<DeadPage> dead_list(JobStore& store, const std::string& topic, size_t offset,
                                  size_t count) {
  return wait_on<Result<DeadPage>>(store.addresses(), [&](const ShardSet& set, auto done) {
    dq::dead_list(set, topic, offset, count, done);
  });
}

inline Result<int64_t> dead_count(JobStore& store, const std::string& topic) {
  return wait_on<Result<int64_t>>(
      store.addresses(), [&](const ShardSet& set, auto done) { dq::dead_count(set, topic, done); });
}

inline Result<int64_t> dead_requeue(JobStore& store, const std::string& topic,
                                    const std::string& id) {
  return wait_on<Result<int64_t>>(store.addresses(), [&](const ShardSet& set, auto done) {
    dq::dead_requeue(set, topic, id, done);
  });
}

inline Result<int64_t> dead_purge(JobStore& store, const std::string& topic) {
  return wait_on<Result<int64_t>>(
      store.addresses(), [&](const ShardSet& set, auto done) { dq::dead_purge(set, topic, done); });
}

}  // namespace dq::test

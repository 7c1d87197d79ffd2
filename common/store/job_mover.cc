// Implements common/store/job_mover.h.
#include "common/store/job_mover.h"

#include <algorithm>
#include <map>

#include "common/core/log.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"

namespace dq {
namespace {

std::vector<std::string> strings_of(const redisReply* reply) {
  std::vector<std::string> out;
  if (reply->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < reply->elements; ++i) {
      out.push_back(reply_string(reply->element[i]));
    }
  }
  return out;
}

// A script's integer answer, -1 for anything else.
int64_t integer_of(const redisReply* reply) {
  int64_t value = -1;
  return reply_int(reply, &value) ? value : -1;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> JobMover::marked(size_t source, size_t most) {
  std::vector<std::pair<std::string, std::string>> pairs;
  auto reply = store_.shard(source).command({"HGETALL", keys::moving()});
  if (!reply.is_ok()) {
    return pairs;
  }
  auto fields = strings_of(reply->get());
  for (size_t i = 0; i + 1 < fields.size() && pairs.size() < most; i += 2) {
    pairs.emplace_back(fields[i], fields[i + 1].substr(0, fields[i + 1].find('|')));
  }
  return pairs;
}

int JobMover::move(size_t source, const std::vector<std::pair<std::string, std::string>>& pairs,
                   int64_t margin_ms) {
  if (pairs.empty()) {
    return 0;
  }
  auto reply = store_.shard(source).run(move_mark_call(pairs, margin_ms));
  if (!reply.is_ok()) {
    return -1;
  }
  return move_batch(source, marked_jobs_of(reply->get()));
}

int JobMover::move_batch(size_t source, const std::vector<MarkedJob>& jobs) {
  const std::string& from = names_[source];
  std::map<size_t, std::vector<const MarkedJob*>> writes;
  std::map<size_t, std::vector<std::pair<std::string, std::string>>> drops;
  std::map<std::string, const MarkedJob*> by_key;
  std::map<std::string, size_t> target_index;
  // job key, "done", "undo" or "dropped"
  std::vector<std::pair<std::string, std::string>> ends;
  for (const MarkedJob& job : jobs) {
    auto found = std::find(names_.begin(), names_.end(), job.target);
    if (found == names_.end()) {
      ends.emplace_back(job.key, "undo");  // marked for a shard since removed
      continue;
    }
    size_t target = static_cast<size_t>(found - names_.begin());
    target_index[job.key] = target;
    by_key[job.key] = &job;
    if (job.record.empty()) {
      drops[target].emplace_back(job.key, job.created);  // deleted during its move
    } else {
      writes[target].push_back(&job);
    }
  }
  // A deleted job's copy goes first, then its mark: a crash between the two
  // leaves the mark, and the next pass drops again.
  for (const auto& [target, list] : drops) {
    if (store_.shard(target).run(move_drop_call(list)).is_ok()) {
      for (const auto& [key, created] : list) {
        ends.emplace_back(key, "dropped");
      }
    }
  }
  for (const auto& [target, list] : writes) {
    auto written = store_.shard(target).run(move_in_call(list));
    bool counted = written.is_ok() && (*written)->type == REDIS_REPLY_ARRAY &&
                   (*written)->elements == 2 * list.size();
    if (!counted) {
      continue;  // not answered: the jobs stay marked, redone next pass
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (integer_of((*written)->element[2 * i]) == 2) {
        err_log().warn(
            "job {} not moved from shard {}: shard {} holds that id with another body; delete "
            "one of them",
            list[i]->key, from, names_[target]);
        ends.emplace_back(list[i]->key, "undo");
        continue;
      }
      ends.emplace_back(list[i]->key, "done");
    }
  }
  if (ends.empty()) {
    return 0;
  }
  auto done = store_.shard(source).run(move_done_call(ends));
  if (!done.is_ok() || (*done)->type != REDIS_REPLY_ARRAY || (*done)->elements != ends.size()) {
    return 0;  // the marks stay: the next pass ends them (move_in answers "moved before")
  }
  // A job deleted during its move kept its mark: its copy on the target is
  // dropped, then the mark ends. A drop not answered leaves the mark, and
  // the next pass drops again.
  std::map<size_t, std::vector<std::pair<std::string, std::string>>> deleted;
  int ended = 0;  // moved, or dropped as deleted (not undone)
  for (size_t i = 0; i < ends.size(); ++i) {
    const std::string& key = ends[i].first;
    int64_t verdict = integer_of((*done)->element[i]);
    ended += verdict == 1 || verdict == 3;
    auto job = by_key.find(key);
    if (verdict == 3 && ends[i].second == "done" && job != by_key.end()) {
      deleted[target_index[key]].emplace_back(key, job->second->created);
    }
  }
  std::vector<std::pair<std::string, std::string>> dropped;
  for (const auto& [target, list] : deleted) {
    if (store_.shard(target).run(move_drop_call(list)).is_ok()) {
      for (const auto& [key, created] : list) {
        dropped.emplace_back(key, "dropped");
      }
    }
  }
  if (!dropped.empty()) {
    (void)store_.shard(source).run(move_done_call(dropped));  // not answered: redone next pass
  }
  return ended;
}

}  // namespace dq

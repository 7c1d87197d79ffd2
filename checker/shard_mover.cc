#include "checker/shard_mover.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "common/core/log.h"
#include "common/core/shard.h"
#include "common/core/stop_flag.h"
#include "common/redis/redis_scan.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "common/store/placement.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr size_t kBatch = 500;           // jobs marked per pass
constexpr int64_t kMoverLeaseMs = 5000;  // renewed every pass; a dead holder's lease runs out
constexpr int kIdleMs = 1000;            // between passes with nothing to move

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

// The holder "host:pid" of a lease when it is a process of this host that is
// gone (kill -9 of a checker, restarted by its master), else "".
std::string dead_holder(const std::string& holder, const std::string& host) {
  size_t colon = holder.rfind(':');
  if (colon == std::string::npos || holder.compare(0, colon, host) != 0) {
    return "";
  }
  long pid = std::strtol(holder.c_str() + colon + 1, nullptr, 10);
  if (pid <= 0 || pid == getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) {
    return "";
  }
  return holder;
}

}  // namespace

ShardMover::ShardMover(const Config& config)
    : config_(config),
      store_(config.shards, config.redis_connect_timeout_ms, config.redis_command_timeout_ms),
      names_(shard_names(config.shards)) {
  for (size_t i = 0; i < names_.size(); ++i) {
    const auto& none = config.no_new_jobs;
    placing_.push_back(std::find(none.begin(), none.end(), names_[i]) == none.end());
    if (std::find(config.draining.begin(), config.draining.end(), names_[i]) !=
        config.draining.end()) {
      draining_.push_back(i);
    }
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  host_ = host;
  holder_ = host_ + ":" + std::to_string(getpid());
}

void ShardMover::run() {
  while (!stop_requested()) {
    int moved = 0;
    for (size_t source : draining_) {
      moved += pass(source);
    }
    int wait_ms = moved > 0 ? 0 : kIdleMs;
    for (int slept = 0; slept < wait_ms && !stop_requested(); slept += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

bool ShardMover::take_lease(size_t source) {
  RedisConnection& shard = store_.shard(source);
  auto lease = shard.run(move_lease_call(holder_, kMoverLeaseMs, ""));
  if (!lease.is_ok()) {
    return false;
  }
  if (integer_of(lease->get()) == 1) {
    return true;
  }
  auto held = shard.command({"GET", keys::mover_lease()});
  std::string gone = held.is_ok() ? dead_holder(reply_string(held->get()), host_) : "";
  if (gone.empty()) {
    return false;  // another checker moves it
  }
  auto taken = shard.run(move_lease_call(holder_, kMoverLeaseMs, gone));
  bool ours = taken.is_ok() && integer_of(taken->get()) == 1;
  if (ours) {
    err_log().info("moving jobs off shard {}: took over from {}, which is gone", names_[source],
                   gone);
  }
  return ours;
}

std::string ShardMover::target_of(const std::string& key, size_t source) const {
  for (size_t index : shard_order(config_.shards, key)) {
    if (index != source && placing_[index]) {
      return names_[index];
    }
  }
  return "";
}

std::vector<std::string> ShardMover::dead_keys(size_t source, size_t most) {
  RedisConnection& shard = store_.shard(source);
  std::vector<std::string> keys;
  // Only while the shard counts a dead job: no SCAN of its keyspace otherwise.
  auto counts = shard.command({"HGETALL", keys::counts()});
  if (!counts.is_ok()) {
    return keys;
  }
  auto fields = strings_of(counts->get());
  bool any_dead = false;
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string& field = fields[i];
    any_dead = any_dead || (field.size() > 2 && field.compare(field.size() - 2, 2, ":x") == 0 &&
                            std::strtoll(fields[i + 1].c_str(), nullptr, 10) > 0);
  }
  if (!any_dead) {
    return keys;
  }
  auto dead_sets = scan_keys(shard, keys::dead_prefix() + "*");
  if (!dead_sets.is_ok()) {
    return keys;
  }
  for (const auto& set : *dead_sets) {
    if (keys.size() >= most) {
      break;
    }
    auto dead = shard.command({"ZRANGE", set, "0", std::to_string(most - keys.size() - 1)});
    for (auto& key : dead.is_ok() ? strings_of(dead->get()) : std::vector<std::string>()) {
      keys.push_back(std::move(key));
    }
  }
  return keys;
}

std::vector<std::pair<std::string, std::string>> ShardMover::work(size_t source) {
  RedisConnection& shard = store_.shard(source);
  std::vector<std::pair<std::string, std::string>> pairs;
  auto marked = shard.command({"HGETALL", keys::moving()});
  if (!marked.is_ok()) {
    return pairs;
  }
  auto fields = strings_of(marked->get());
  for (size_t i = 0; i + 1 < fields.size() && pairs.size() < kBatch; i += 2) {
    pairs.emplace_back(fields[i], fields[i + 1].substr(0, fields[i + 1].find('|')));
  }
  if (!pairs.empty()) {
    return pairs;  // moves that did not end: finished first, with their targets
  }
  auto picked = shard.run(move_pick_call(static_cast<int>(kBatch)));
  std::vector<std::string> keys =
      picked.is_ok() ? strings_of(picked->get()) : std::vector<std::string>();
  if (keys.size() < kBatch) {
    for (auto& key : dead_keys(source, kBatch - keys.size())) {
      keys.push_back(std::move(key));
    }
  }
  for (auto& key : keys) {
    std::string target = target_of(key, source);
    if (!target.empty()) {
      pairs.emplace_back(std::move(key), std::move(target));
    }
  }
  return pairs;
}

int ShardMover::pass(size_t source) {
  if (!take_lease(source)) {
    return 0;  // unreachable, or another checker moves it
  }
  auto pairs = work(source);
  if (pairs.empty()) {
    return 0;
  }
  auto reply = store_.shard(source).run(move_mark_call(pairs));
  if (!reply.is_ok()) {
    return 0;
  }
  auto fields = strings_of(reply->get());
  std::vector<MarkedJob> jobs;
  for (size_t i = 0; i + 6 < fields.size(); i += 7) {
    jobs.push_back(MarkedJob{fields[i], fields[i + 1], fields[i + 2], fields[i + 3], fields[i + 4],
                             fields[i + 5], fields[i + 6]});
  }
  return move_batch(source, jobs);
}

int ShardMover::move_batch(size_t source, const std::vector<MarkedJob>& jobs) {
  const std::string& from = names_[source];
  std::map<size_t, std::vector<const MarkedJob*>> writes;
  std::map<size_t, std::vector<std::pair<std::string, std::string>>> drops;
  std::map<std::string, size_t> target_index;
  std::vector<std::pair<std::string, std::string>> ends;  // job key, "done" or "undo"
  for (const MarkedJob& job : jobs) {
    auto found = std::find(names_.begin(), names_.end(), job.target);
    if (found == names_.end()) {
      ends.emplace_back(job.key, "undo");  // marked for a shard since removed
      continue;
    }
    size_t target = static_cast<size_t>(found - names_.begin());
    target_index[job.key] = target;
    if (job.record.empty()) {
      drops[target].emplace_back(job.key, job.created);  // deleted during its move
    } else {
      writes[target].push_back(&job);
    }
  }
  // A deleted job's copy goes first, then its mark: a crash between the two
  // leaves the mark, and the next pass drops again.
  for (const auto& [target, list] : drops) {
    if (store_.shard(target).run(move_drop_call(list, names_)).is_ok()) {
      for (const auto& [key, created] : list) {
        ends.emplace_back(key, "done");
      }
    }
  }
  std::map<std::string, std::string> incarnation;  // pending jobs written held
  for (const auto& [target, list] : writes) {
    auto written = store_.shard(target).run(move_in_call(list, from));
    auto answers = written.is_ok() ? strings_of(written->get()) : std::vector<std::string>();
    bool counted = written.is_ok() && (*written)->type == REDIS_REPLY_ARRAY &&
                   (*written)->elements == 2 * list.size();
    if (!counted) {
      continue;  // not answered: the jobs stay marked, redone next pass
    }
    for (size_t i = 0; i < list.size(); ++i) {
      int64_t verdict = integer_of((*written)->element[2 * i]);
      if (verdict == 2) {
        err_log().warn("job {} not moved from shard {}: shard {} holds that id with another body",
                       list[i]->key, from, names_[target]);
        ends.emplace_back(list[i]->key, "undo");
        continue;
      }
      ends.emplace_back(list[i]->key, "done");
      if (list[i]->dead_score.empty()) {
        incarnation[list[i]->key] = answers[2 * i + 1];
      }
    }
  }
  if (ends.empty()) {
    return 0;
  }
  auto done = store_.shard(source).run(move_done_call(ends));
  if (!done.is_ok() || (*done)->type != REDIS_REPLY_ARRAY || (*done)->elements != ends.size()) {
    return 0;  // the marks stay: the next pass ends them (move_in answers "moved before")
  }
  // The target's held copies are released now (the source holds them no
  // more); copies of jobs deleted during the move are dropped.
  std::map<size_t, std::vector<ScriptCall>> settles;
  std::map<size_t, std::vector<std::pair<std::string, std::string>>> deleted;
  int ended = 0;  // moved, or dropped as deleted (not undone: those wait a pass)
  for (size_t i = 0; i < ends.size(); ++i) {
    const std::string& key = ends[i].first;
    int64_t verdict = integer_of((*done)->element[i]);
    auto held = incarnation.find(key);
    ended += verdict == 1 || verdict == 3;
    if (verdict == 1) {
      if (held != incarnation.end()) {
        settles[target_index[key]].push_back(settle_call(key, held->second, "ok", from, names_));
      }
    } else if (verdict == 3 && target_index.count(key) != 0) {
      auto job = std::find_if(jobs.begin(), jobs.end(),
                              [&key](const MarkedJob& each) { return each.key == key; });
      if (job != jobs.end() && !job->record.empty()) {
        deleted[target_index[key]].emplace_back(key, job->created);
      }
    }
  }
  for (const auto& [target, calls] : settles) {
    (void)store_.shard(target).run_all(calls);  // not answered: timer/held_verifier settles them
  }
  for (const auto& [target, list] : deleted) {
    // Not answered: a held copy is dropped by timer/held_verifier (the
    // source's tombstone); a dead letter's copy stays listed.
    (void)store_.shard(target).run(move_drop_call(list, names_));
  }
  return ended;
}

}  // namespace dq

#include "checker/shard_mover.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/core/log.h"
#include "common/core/shard.h"
#include "common/core/stop_flag.h"
#include "common/redis/redis_scan.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "common/store/placement.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr size_t kBatch = 200;       // jobs marked per pass
constexpr int64_t kLeaseMs = 30000;  // a mover that died leaves its shard this long
constexpr int kIdleMs = 1000;        // between passes with nothing to move

std::string text_of(const redisReply* reply) {
  return reply != nullptr && reply->type == REDIS_REPLY_STRING ? std::string(reply->str, reply->len)
                                                               : std::string();
}

std::vector<std::string> strings_of(const redisReply* reply) {
  std::vector<std::string> out;
  if (reply != nullptr && reply->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < reply->elements; ++i) {
      out.push_back(text_of(reply->element[i]));
    }
  }
  return out;
}

int64_t integer_of(const redisReply* reply) {
  return reply != nullptr && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
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
  holder_ = std::string(host) + ":" + std::to_string(getpid());
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

std::string ShardMover::target_of(const std::string& key, size_t source) const {
  for (size_t index : shard_order(config_.shards, key)) {
    if (index != source && placing_[index]) {
      return names_[index];
    }
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> ShardMover::work(size_t source) {
  RedisConnection& shard = store_.shard(source);
  std::vector<std::pair<std::string, std::string>> pairs;
  auto marked = shard.command({"HGETALL", keys::moving()});
  if (!marked.is_ok()) {
    return pairs;
  }
  auto fields = strings_of(marked->get());
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    pairs.emplace_back(fields[i], fields[i + 1].substr(0, fields[i + 1].find('|')));
  }
  if (!pairs.empty()) {
    return pairs;  // a move that did not end: finished first, with its target
  }
  std::vector<std::string> keys;
  auto buckets = shard.command({"ZRANGE", keys::due_index(), "0", std::to_string(kBatch - 1)});
  if (buckets.is_ok()) {
    for (const auto& bucket : strings_of(buckets->get())) {
      if (keys.size() >= kBatch) {
        break;
      }
      auto due = shard.command({"ZRANGE", keys::due_prefix() + bucket, "0", "-1"});
      if (due.is_ok()) {
        for (auto& key : strings_of(due->get())) {
          keys.push_back(std::move(key));
        }
      }
    }
  }
  if (keys.empty()) {
    auto dead_sets = scan_keys(shard, keys::dead_prefix() + "*");
    if (dead_sets.is_ok()) {
      for (const auto& set : *dead_sets) {
        if (keys.size() >= kBatch) {
          break;
        }
        auto dead = shard.command({"ZRANGE", set, "0", std::to_string(kBatch - 1)});
        if (dead.is_ok()) {
          for (auto& key : strings_of(dead->get())) {
            keys.push_back(std::move(key));
          }
        }
      }
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
  RedisConnection& shard = store_.shard(source);
  auto lease = shard.run(move_lease_call(holder_, kLeaseMs));
  if (!lease.is_ok() || integer_of(lease->get()) != 1) {
    return 0;  // unreachable, or another host moves it
  }
  auto pairs = work(source);
  if (pairs.empty()) {
    return 0;
  }
  auto reply = shard.run(move_mark_call(pairs));
  if (!reply.is_ok()) {
    return 0;
  }
  auto fields = strings_of(reply->get());
  int moved = 0;
  for (size_t i = 0; i + 5 < fields.size(); i += 6) {
    MarkedJob job{fields[i],     fields[i + 1], fields[i + 2],
                  fields[i + 3], fields[i + 4], fields[i + 5]};
    if (!move_one(source, job)) {
      break;  // a shard did not answer: the job stays marked, redone next pass
    }
    ++moved;
  }
  return moved;
}

bool ShardMover::move_one(size_t source, const MarkedJob& job) {
  auto target = std::find(names_.begin(), names_.end(), job.target);
  bool undo = target == names_.end();  // marked for a shard since removed
  int64_t verdict = -1;
  if (!undo) {
    auto written = store_.shard(target - names_.begin()).run(move_in_call(job, names_[source]));
    if (!written.is_ok()) {
      return false;
    }
    verdict = integer_of(written->get());
    if (verdict == 2) {
      err_log().warn("job {} not moved from shard {}: shard {} holds that id with another body",
                     job.key, names_[source], job.target);
      undo = true;
    } else if (verdict != 0 && verdict != 1) {
      return false;
    }
  }
  auto done = store_.shard(source).run(move_done_call(job.key, undo));
  if (!done.is_ok()) {
    return false;
  }
  if (!undo && integer_of(done->get()) == 0 && !job.dead_score.empty()) {
    // Deleted on the source during its move: a dead job's copy goes too (a
    // pending one's held copy is dropped by claim.lua's tombstone).
    std::string topic, id;
    if (split_job_key(job.key, &topic, &id)) {
      auto gone = store_.shard(target - names_.begin()).run(del_call(topic, id, false, names_));
      (void)gone;  // best effort: the dead letter of a deleted job stays listed
    }
  }
  return true;
}

}  // namespace dq

#include "checker/shard_mover.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "common/registry/shard_list.h"
#include "common/registry/shard_workflow.h"
#include "common/store/fence.h"
#include "common/store/keys.h"
#include "common/store/placement.h"
#include "common/store/reply_values.h"
#include "common/store/schedule_ticks.h"
#include "common/store/store_upgrade.h"

namespace dq {
namespace {

constexpr int kBatch = 500;  // jobs read (and moved) per step
// Keys a keyspace SCAN for ended records visits per step: most are not
// ended records (buckets, due zsets, counters), skipped by MATCH.
constexpr int kEndedScanCount = 2000;
constexpr int64_t kMoverLeaseMs = 5000;  // renewed every pass; a dead holder's lease runs out
constexpr int kIdleMs = 1000;            // between whole passes that moved nothing
constexpr int kScanPauseMs = 10;         // between steps of a pass that moved nothing
constexpr int kUpgradeRetryMs = 5000;    // between tries of a store upgrade left undone

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

std::vector<std::string> count_of(int batch) { return {"COUNT", std::to_string(batch)}; }

}  // namespace

ShardMover::ShardMover(const Config& config)
    : config_(config),
      store_(config.shards, config.redis_connect_timeout_ms, config.redis_command_timeout_ms),
      names_(shard_names(config.shards)),
      roles_(roles_of(config)),
      mover_(store_, names_),
      topics_(config.sqlite_path) {
  for (size_t i = 0; i < roles_.size(); ++i) {
    if (roles_[i] == ShardRole::kMovingIn || roles_[i] == ShardRole::kDraining) {
      changing_ = i;  // one change at a time (common/registry/shard_workflow.h)
    }
  }
  if (!changing_) {
    return;
  }
  // A draining shard's jobs all leave it; the jobs of a shard moving in may
  // be on any other.
  for (size_t i = 0; i < roles_.size(); ++i) {
    bool source = roles_[*changing_] == ShardRole::kDraining
                      ? i == *changing_
                      : i != *changing_ && roles_[i] != ShardRole::kDrained;
    if (source) {
      Source each;
      each.shard = i;
      sources_.push_back(each);
    }
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  host_ = host;
  holder_ = host_ + ":" + std::to_string(getpid());
}

void ShardMover::run() {
  // A shard the master could not bring to store v4 at its start is tried
  // every kUpgradeRetryMs beside the moves (a shard down does not hold up a
  // change that does not need it).
  // The master upgraded what answered just before it started this process:
  // the first look waits a retry period, so a checker stopped at once (a
  // reload) never waits on a shard that hangs.
  bool upgraded = false;
  int64_t next_upgrade_ms = monotonic_ms() + kUpgradeRetryMs;
  int64_t next_log_ms = 0;
  while (!stop_requested() && (changing_ || !upgraded)) {
    if (!upgraded && monotonic_ms() >= next_upgrade_ms) {
      Status done = upgrade_stores(config_);
      upgraded = done.is_ok();
      next_upgrade_ms = monotonic_ms() + kUpgradeRetryMs;
      if (!upgraded && monotonic_ms() >= next_log_ms) {
        err_log().warn("{}; trying again every {} s", done.message(), kUpgradeRetryMs / 1000);
        next_log_ms = monotonic_ms() + 60000;
      }
    }
    int moved = 0;
    bool mid_pass = false;
    if (changing_ && !settled_ && take_lease()) {
      // Named again every round: a fence lasts kFenceMs past its last naming.
      bool fenced = fence();
      if (fenced && !fenced_) {
        fenced_ = true;
        err_log().info("shard {} {}: fenced; moving the jobs whose home changed",
                       names_[*changing_],
                       roles_[*changing_] == ShardRole::kDraining ? "drains" : "moves in");
      }
      if (fenced) {
        for (Source& source : sources_) {
          moved += step(source);
          mid_pass = mid_pass || source.next_bucket > 0 || source.phase != Phase::kBuckets;
        }
        settle_when_done();
      }
    }
    int wait_ms = moved > 0 ? 0 : mid_pass ? kScanPauseMs : kIdleMs;
    for (int slept = 0; slept < wait_ms && !stop_requested(); slept += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, wait_ms)));
    }
  }
}

bool ShardMover::take_lease() {
  RedisConnection& shard = store_.shard(*changing_);
  bool draining = roles_[*changing_] == ShardRole::kDraining;
  auto lease = shard.run(move_lease_call(holder_, kMoverLeaseMs, "", draining));
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
  auto taken = shard.run(move_lease_call(holder_, kMoverLeaseMs, gone, draining));
  bool ours = taken.is_ok() && integer_of(taken->get()) == 1;
  if (ours) {
    err_log().info("moving jobs for shard {}: took over from {}, which is gone", names_[*changing_],
                   gone);
  }
  return ours;
}

bool ShardMover::fence() {
  size_t changing = *changing_;
  if (roles_[changing] == ShardRole::kDraining) {
    std::vector<std::string> active;
    for (size_t i = 0; i < roles_.size(); ++i) {
      if (roles_[i] == ShardRole::kActive) {
        active.push_back(names_[i]);
      }
    }
    return store_.shard(changing).command(fence_argv(active)).is_ok();
  }
  for (const Source& source : sources_) {
    if (!store_.shard(source.shard).command(fence_argv({names_[changing]})).is_ok()) {
      return false;
    }
  }
  return true;
}

void ShardMover::clear_fences() {
  size_t changing = *changing_;
  if (roles_[changing] == ShardRole::kDraining) {
    (void)store_.shard(changing).command({"DEL", keys::fence()});
    return;
  }
  for (const Source& source : sources_) {
    (void)store_.shard(source.shard).command({"ZREM", keys::fence(), names_[changing]});
  }
}

std::vector<std::pair<std::string, std::string>> ShardMover::off_home(
    Source& source, const std::vector<std::string>& keys) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& key : keys) {
    auto homes = id_homes(config_.shards, roles_, key);
    if (homes && homes->home != source.shard) {
      pairs.emplace_back(key, names_[homes->home]);
      ++source.off_home;
    }
  }
  return pairs;
}

int ShardMover::step(Source& source) {
  // Moves a crash left unfinished go first, with the targets they were marked for.
  auto marked = mover_.marked(source.shard, kBatch);
  if (!marked.empty()) {
    source.off_home += static_cast<int64_t>(marked.size());
    return std::max(0, mover_.move(source.shard, marked));
  }
  switch (source.phase) {
    case Phase::kBuckets:
      return step_buckets(source);
    case Phase::kFlat:
      return step_flat(source);
    case Phase::kWaiting:
      return step_waiting(source);
    case Phase::kAwaited:
      return step_awaited(source);
    case Phase::kEnded:
      return step_ended(source);
    case Phase::kSchedules:
      return step_schedules(source);
  }
  return 0;
}

int ShardMover::step_buckets(Source& source) {
  auto reply = store_.shard(source.shard).run(move_scan_call(source.next_bucket, kBatch));
  if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements == 0) {
    return 0;  // asked again next round, from the same bucket
  }
  const redisReply* r = reply->get();
  int64_t next = integer_of(r->element[0]);
  std::vector<std::string> keys;
  for (size_t i = 1; i + 1 < r->elements; i += 2) {
    keys.push_back(reply_string(r->element[i]));
  }
  auto pairs = off_home(source, keys);
  if (next < 0) {
    source.next_bucket = 0;
    next_phase(source);
  } else {
    source.next_bucket = static_cast<uint32_t>(next);
  }
  return std::max(0, mover_.move(source.shard, pairs));
}

int ShardMover::step_flat(Source& source) {
  // In-flight and dead jobs: a dead one moves, one in flight finishes
  // here (and, retried, moves with the pending ones).
  std::vector<std::string> found;
  if (!scan(source, {"HSCAN", keys::flat_records()}, count_of(kBatch), &found)) {
    return 0;
  }
  std::vector<std::string> dead;
  for (size_t i = 0; i + 1 < found.size(); i += 2) {
    const std::string& record = found[i + 1];
    if (!record.empty() && record[0] == 'x') {
      dead.push_back(found[i]);
      continue;
    }
    auto homes = id_homes(config_.shards, roles_, found[i]);
    source.off_home += homes && homes->home != source.shard;  // waits until it ends here
  }
  return std::max(0, mover_.move(source.shard, off_home(source, dead)));
}

int ShardMover::step_waiting(Source& source) {
  // Jobs waiting for others: moved whatever their due time (they are due
  // only once released, and a release waits while one is being moved).
  std::vector<std::string> found;
  if (!scan(source, {"HSCAN", keys::after()}, count_of(kBatch), &found)) {
    return 0;
  }
  std::vector<std::string> waiting;
  for (size_t i = 0; i < found.size(); i += 2) {
    waiting.push_back(found[i]);
  }
  return std::max(0, mover_.move(source.shard, off_home(source, waiting)));
}

int ShardMover::step_awaited(Source& source) {
  std::vector<std::string> awaited;
  if (!scan(source, {"SSCAN", keys::awaited()}, count_of(kBatch), &awaited)) {
    return 0;
  }
  // Grouped by home: carried there, then ended here.
  std::map<size_t, std::vector<std::string>> by_home;
  for (const std::string& key : awaited) {
    auto homes = id_homes(config_.shards, roles_, key);
    if (homes && homes->home != source.shard) {
      by_home[homes->home].push_back(key);
    }
  }
  int carried = 0;
  for (const auto& [home, keys] : by_home) {
    // Registrations of jobs still here stay: they move with their job.
    auto read = store_.shard(source.shard).run(dep_carry_out_call(keys));
    if (!read.is_ok() || (*read)->type != REDIS_REPLY_ARRAY) {
      source.off_home += static_cast<int64_t>(keys.size());
      continue;
    }
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 0; i + 1 < (*read)->elements; i += 2) {
      pairs.emplace_back(reply_string((*read)->element[i]), reply_string((*read)->element[i + 1]));
    }
    source.off_home += static_cast<int64_t>(pairs.size());
    if (pairs.empty() || !store_.shard(home).run(dep_carry_in_call(pairs)).is_ok() ||
        !store_.shard(source.shard).run(dep_carry_done_call(pairs)).is_ok()) {
      continue;  // carried again next pass: registering twice changes nothing
    }
    carried += static_cast<int>(pairs.size());
  }
  return carried;
}

int ShardMover::step_ended(Source& source) {
  // Ended records are keys of their own: the keyspace is scanned (buckets,
  // counters and the rest are skipped by MATCH, on Redis's side).
  static const std::string prefix = keys::ended("");
  std::vector<std::string> found;
  if (!scan(source, {"SCAN"}, {"MATCH", prefix + "*", "COUNT", std::to_string(kEndedScanCount)},
            &found)) {
    return 0;
  }
  std::map<size_t, std::vector<std::string>> by_home;
  for (const std::string& ended_key : found) {
    std::string key = ended_key.substr(prefix.size());
    auto homes = id_homes(config_.shards, roles_, key);
    if (homes && homes->home != source.shard) {
      by_home[homes->home].push_back(std::move(key));
    }
  }
  int carried = 0;
  RedisConnection& shard = store_.shard(source.shard);
  for (const auto& [home, keys] : by_home) {
    source.off_home += static_cast<int64_t>(keys.size());
    auto read = shard.run(ended_carry_out_call(keys));
    if (!read.is_ok() || (*read)->type != REDIS_REPLY_ARRAY) {
      continue;  // read again next pass
    }
    std::vector<std::string> triples;
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 0; i + 2 < (*read)->elements; i += 3) {
      std::string key = reply_string((*read)->element[i]);
      std::string record = reply_string((*read)->element[i + 1]);
      pairs.emplace_back(key, record);  // key and record; the third is its TTL
      triples.insert(triples.end(),
                     {std::move(key), std::move(record), reply_string((*read)->element[i + 2])});
    }
    // Written there first, then removed here only if unchanged: a crash
    // between the two leaves the same end on both, carried again next pass.
    if (pairs.empty() || !store_.shard(home).run(ended_carry_in_call(triples)).is_ok() ||
        !shard.run(ended_carry_done_call(pairs)).is_ok()) {
      continue;
    }
    carried += static_cast<int>(pairs.size());
  }
  return carried;
}

int ShardMover::step_schedules(Source& source) {
  // A schedule's next tick lives on its home (common/store/schedule_ticks.h).
  // Timers that place it on its new home go on from the old one's while it
  // is there (timer/schedule_runner.h); carried, it stays where it belongs
  // after the change, and a later change back never finds a stale one.
  topics_.refresh_if_older(config_.registry_refresh_ms);
  RedisConnection& shard = store_.shard(source.shard);
  int carried = 0;
  for (const auto& [name, topic] : topics_.all()) {
    for (const TopicSchedule& schedule : topic.schedules) {
      auto homes = id_homes(config_.shards, roles_, schedule_home_key(name, schedule.id));
      if (!homes || homes->home == source.shard) {
        continue;
      }
      std::string key = keys::schedule_next(schedule.id);
      auto stored = shard.command({"GET", key});
      if (!stored.is_ok() || (*stored)->type == REDIS_REPLY_NIL) {
        source.off_home += stored.is_ok() ? 0 : 1;
        continue;
      }
      std::string next = reply_string(stored->get());
      ++source.off_home;
      // The later of the two: a timer may have moved it on at its home already.
      if (store_.shard(homes->home).run(schedule_carry_in_call(schedule.id, next)).is_ok() &&
          shard.run(schedule_carry_done_call(schedule.id, next)).is_ok()) {
        ++carried;
      }
    }
  }
  next_phase(source);
  return carried;
}

bool ShardMover::scan(Source& source, std::vector<std::string> head,
                      const std::vector<std::string>& tail, std::vector<std::string>* found) {
  head.push_back(source.cursor);
  head.insert(head.end(), tail.begin(), tail.end());
  auto reply = store_.shard(source.shard).command(head);
  if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != 2) {
    return false;
  }
  const redisReply* r = reply->get();
  source.cursor = reply_string(r->element[0]);
  if (source.cursor == "0") {
    next_phase(source);  // the batch in hand is still handled by the caller
  }
  const redisReply* members = r->element[1];
  for (size_t i = 0; members->type == REDIS_REPLY_ARRAY && i < members->elements; ++i) {
    found->push_back(reply_string(members->element[i]));
  }
  return true;
}

void ShardMover::next_phase(Source& source) {
  source.cursor = "0";
  switch (source.phase) {
    case Phase::kBuckets:
      source.phase = Phase::kFlat;
      return;
    case Phase::kFlat:
      source.phase = Phase::kWaiting;
      return;
    case Phase::kWaiting:
      source.phase = Phase::kAwaited;
      return;
    case Phase::kAwaited:
      source.phase = Phase::kEnded;
      return;
    case Phase::kEnded:
      source.phase = Phase::kSchedules;
      return;
    case Phase::kSchedules:
      // A whole pass ended: clean when it saw nothing off its home.
      source.clean = source.off_home == 0;
      source.off_home = 0;
      source.phase = Phase::kBuckets;
      return;
  }
}

void ShardMover::settle_when_done() {
  size_t changing = *changing_;
  const std::string& name = names_[changing];
  bool draining = roles_[changing] == ShardRole::kDraining;
  if (draining) {
    // Empty, and a whole pass found nothing left (registrations and
    // schedules' next ticks too, which the job count does not see).
    auto jobs = jobs_on_shard(config_, config_.shards[changing]);
    if (!jobs.is_ok() || *jobs > 0 ||
        !std::all_of(sources_.begin(), sources_.end(),
                     [](const Source& source) { return source.clean; }) ||
        !drain_settled(config_, config_.shards[changing]).is_ok()) {
      return;
    }
  } else if (!std::all_of(sources_.begin(), sources_.end(),
                          [](const Source& source) { return source.clean; })) {
    return;
  }
  Status ended = settle_shard_change(config_, name, draining ? "draining" : "moving",
                                     draining ? "drained" : "active");
  if (!ended.is_ok()) {
    err_log().warn(
        "shard {}: every job is home, but its change cannot be ended yet ({}); "
        "trying again",
        name, ended.message());
    return;
  }
  clear_fences();
  settled_ = true;
  err_log().info(draining ? "shard {} is drained: it holds no job, and no host asks it any more"
                          : "shard {} is active: every job whose home it is was moved to it",
                 name);
}

}  // namespace dq

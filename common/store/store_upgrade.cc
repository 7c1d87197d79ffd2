#include "common/store/store_upgrade.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/text_list.h"
#include "common/redis/redis_scan.h"
#include "common/store/job_meta.h"
#include "common/store/job_mover.h"
#include "common/store/job_records.h"
#include "common/store/job_store.h"
#include "common/store/keys.h"
#include "common/store/lua_scripts.h"
#include "common/store/move_calls.h"
#include "common/store/placement.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr int kCurrentVersion = 4;
constexpr int kBatch = 200;
// Each call is a bounded batch, so a shard that hangs costs a start (or a
// checker's stop) this much at most, whatever [redis] command_timeout_ms is.
constexpr int kConnectMs = 1000;
constexpr int kCommandMs = 2000;
// Store v3's keys for its held copies, markers and tombstones: read only
// here, by the upgrade that removes them.
const std::string kHeldPrefix = keys::kPrefix + "held:";
const std::string kTombs = keys::kPrefix + "tombs";
// How far two shards' clocks may disagree when a tombstone is compared with
// a held copy's creation (as store v3 compared them).
constexpr int64_t kShardClockSlackMs = 1000;

std::string version_key() { return keys::kPrefix + "store_version"; }

ScriptCall upgrade_call(std::vector<std::string> args) {
  return {&kStoreUpgradeScript,
          {version_key(), keys::stats(day_of(now_ms())), keys::counts(), keys::bodies(),
           keys::errors(), keys::timer_wake(), keys::working()},
          std::move(args)};
}

// One run of upgrade_stores.
class Upgrade {
 public:
  explicit Upgrade(const Config& config)
      : config_(config),
        store_(config.shards, std::min(config.redis_connect_timeout_ms, kConnectMs),
               std::min(config.redis_command_timeout_ms, kCommandMs)),
        names_(shard_names(config.shards)),
        roles_(roles_of(config)),
        mover_(store_, names_),
        left_(config.shards.size()) {}

  Status run() {
    std::vector<size_t> shards;
    for (size_t s = 0; s < names_.size(); ++s) {
      auto version = store_.shard(s).command({"GET", version_key()});
      int64_t at = 0;
      if (!version.is_ok()) {
        left_[s] = "it did not answer (" + version.status().message() + ")";
        continue;
      }
      // dq's function library, before the roles start: otherwise each
      // role's first call on a new Redis loads it (all at once, each its
      // own load). A refusal (full) is left to those calls.
      Status loaded = store_.shard(s).load_library_if_missing(kScriptLibrary);
      if (!loaded.is_ok()) {
        err_log().info("shard {}: dq's functions not loaded yet ({})", names_[s], loaded.message());
      }
      if (!reply_int(version->get(), &at) || at < kCurrentVersion) {
        shards.push_back(s);
      }
    }
    for (size_t s : shards) {
      convert_and_finish_moves(s);
    }
    for (size_t s : shards) {
      settle_held(s);
    }
    for (size_t s : shards) {
      move_home(s);
    }
    std::vector<std::string> problems;
    for (size_t s = 0; s < names_.size(); ++s) {
      bool ours = std::find(shards.begin(), shards.end(), s) != shards.end();
      if (ours && left_[s].empty()) {
        finish(s);
      }
      if (!left_[s].empty()) {
        problems.push_back("shard " + names_[s] + ": " + left_[s]);
      }
    }
    if (problems.empty()) {
      return Status::ok();
    }
    return Status(Code::kUnavailable,
                  "store upgrade to one home per id not done yet: " + join_list(problems, "; "));
  }

 private:
  void stuck(size_t s, const std::string& why) {
    if (left_[s].empty()) {
      left_[s] = why;
    }
  }

  void convert_and_finish_moves(size_t s) {
    for (;;) {
      auto current = upgrade_store_step(store_.shard(s), 1000);
      if (!current.is_ok()) {
        return stuck(s, current.status().message());
      }
      if (*current) {
        break;
      }
    }
    for (int rounds = 0; rounds < 1000; ++rounds) {
      auto marked = mover_.marked(s, kBatch);
      if (marked.empty()) {
        return;
      }
      if (mover_.move(s, marked, kMoveAnyDue) <= 0) {
        return stuck(s, "a move it marked could not be ended (its target did not answer)");
      }
    }
  }

  // "dup" when shard `against` holds job_key or deleted it after
  // created_ms; "ok" when it does not; nullopt when it cannot be asked.
  std::optional<std::string> verdict(size_t against, const std::string& job_key,
                                     int64_t created_ms) {
    auto replies =
        store_.shard(against).command_all({record_read_argv(job_key), {"ZSCORE", kTombs, job_key}});
    if (!replies[0].is_ok() || !replies[1].is_ok()) {
      return std::nullopt;
    }
    if ((*replies[0])->type == REDIS_REPLY_STRING) {
      return std::string("dup");
    }
    int64_t deleted_at = 0;
    if (reply_int(replies[1]->get(), &deleted_at) &&
        deleted_at + kShardClockSlackMs >= created_ms) {
      return std::string("dup");
    }
    return std::string("ok");
  }

  // Settles one held copy on `s` (its record as read) against shard `asked`.
  bool settle(size_t s, const std::string& key, const std::string& record,
              const std::string& asked_name, std::optional<size_t> asked) {
    Job job;
    if (!parse_job_meta(record, &job)) {
      job.incarnation = "";  // gone or malformed: the held set's entry goes
    }
    std::string answer = "ok";  // the shard asked is no longer listed
    if (asked && *asked != s) {
      auto seen = verdict(*asked, key, job.created_at_ms);
      if (!seen) {
        stuck(s, "it holds copies waiting for shard " + asked_name + ", which did not answer");
        return false;
      }
      answer = *seen;
    }
    auto settled = store_.shard(s).run(
        upgrade_call({"settle", key, job.incarnation, answer, asked_name, join_list(names_, ",")}));
    if (!settled.is_ok()) {
      stuck(s, settled.status().message());
      return false;
    }
    int64_t outcome = 0;
    if (reply_int(settled->get(), &outcome) && outcome == 2) {
      err_log().warn(
          "store upgrade: job {} was held on shard {} while shard {} was unreachable, and {} "
          "holds it: the held copy is dropped as a duplicate",
          key, names_[s], asked_name, asked_name);
    }
    return true;
  }

  void settle_held(size_t s) {
    if (!left_[s].empty()) {
      return;
    }
    auto sets = scan_keys(store_.shard(s), kHeldPrefix + "*");
    if (!sets.is_ok()) {
      return stuck(s, sets.status().message());
    }
    for (const std::string& set : *sets) {
      std::string against = set.substr(kHeldPrefix.size());
      std::optional<size_t> asked;
      for (size_t i = 0; i < names_.size(); ++i) {
        if (names_[i] == against) {
          asked = i;
        }
      }
      for (;;) {
        auto members = store_.shard(s).command({"ZRANGE", set, "0", std::to_string(kBatch - 1)});
        if (!members.is_ok() || (*members)->type != REDIS_REPLY_ARRAY) {
          return stuck(s, members.is_ok() ? "unexpected reply to ZRANGE " + set
                                          : members.status().message());
        }
        if ((*members)->elements == 0) {
          break;
        }
        std::vector<std::string> keys;
        for (size_t i = 0; i < (*members)->elements; ++i) {
          keys.push_back(reply_string((*members)->element[i]));
        }
        auto records = read_flat_records(store_.shard(s), keys);
        if (!records.is_ok()) {
          return stuck(s, records.status().message());
        }
        for (size_t i = 0; i < keys.size(); ++i) {
          if (!settle(s, keys[i], (*records)[i].value_or(""), against, asked)) {
            return;
          }
        }
      }
    }
  }

  // Every job of `s` whose home is another shard goes home.
  void move_home(size_t s) {
    if (!left_[s].empty()) {
      return;
    }
    std::vector<std::pair<std::string, std::string>> pairs;
    std::vector<std::string> in_flight;
    auto away = [&](const std::string& key) -> std::optional<size_t> {
      auto homes = id_homes(config_.shards, roles_, key);
      if (!homes || homes->home == s) {
        return std::nullopt;
      }
      return homes->home;
    };
    for (int64_t bucket = 0; bucket >= 0;) {
      auto reply = store_.shard(s).run(move_scan_call(static_cast<uint32_t>(bucket), 2000));
      if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements == 0) {
        return stuck(s, reply.is_ok() ? "unexpected reply to move_scan" : reply.status().message());
      }
      const redisReply* r = reply->get();
      reply_int(r->element[0], &bucket);
      for (size_t i = 1; i + 1 < r->elements; i += 2) {
        std::string key = reply_string(r->element[i]);
        if (auto home = away(key)) {
          pairs.emplace_back(key, names_[*home]);
        }
      }
    }
    std::string cursor = "0";
    do {
      auto reply = store_.shard(s).command(
          {"HSCAN", keys::flat_records(), cursor, "COUNT", std::to_string(kBatch)});
      if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != 2) {
        return stuck(s, reply.is_ok() ? "unexpected reply to HSCAN" : reply.status().message());
      }
      cursor = reply_string((*reply)->element[0]);
      const redisReply* fields = (*reply)->element[1];
      for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        std::string key = reply_string(fields->element[i]);
        std::string record = reply_string(fields->element[i + 1]);
        char state = record.empty() ? ' ' : record[0];
        if (state == 'h') {
          // Held in no set store v3 knew of: settled against its home.
          auto homes = id_homes(config_.shards, roles_, key);
          size_t home = homes ? homes->home : s;
          if (!settle(s, key, record, names_[home], home)) {
            return;
          }
          state = 'd';
        }
        auto home = away(key);
        if (!home) {
          continue;
        }
        if (state == 'r' || state == 'w') {
          in_flight.push_back(key);
        }
        pairs.emplace_back(key, names_[*home]);
      }
    } while (cursor != "0");
    if (!in_flight.empty()) {
      std::vector<std::string> args = {"flight"};
      args.insert(args.end(), in_flight.begin(), in_flight.end());
      auto changed = store_.shard(s).run(upgrade_call(args));
      if (!changed.is_ok()) {
        return stuck(s, changed.status().message());
      }
    }
    size_t moved = 0;
    for (size_t first = 0; first < pairs.size(); first += kBatch) {
      std::vector<std::pair<std::string, std::string>> batch(
          pairs.begin() + static_cast<std::ptrdiff_t>(first),
          pairs.begin() + static_cast<std::ptrdiff_t>(std::min(pairs.size(), first + kBatch)));
      int ended = mover_.move(s, batch, kMoveAnyDue);
      moved += ended > 0 ? static_cast<size_t>(ended) : 0;
    }
    if (!mover_.marked(s, 1).empty()) {
      return stuck(s, "jobs it holds could not all be moved home (a home did not answer)");
    }
    if (moved > 0) {
      err_log().info("store upgrade: {} job(s) of shard {} moved to their home shard", moved,
                     names_[s]);
    }
  }

  void finish(size_t s) {
    auto sets = scan_keys(store_.shard(s), kHeldPrefix + "*");
    if (!sets.is_ok()) {
      return stuck(s, sets.status().message());
    }
    for (const std::string& set : *sets) {
      (void)store_.shard(s).command({"DEL", set});  // empty, or naming gone copies
    }
    auto done = store_.shard(s).run(upgrade_call({"done"}));
    if (!done.is_ok()) {
      return stuck(s, done.status().message());
    }
    err_log().info("store upgrade: shard {} is at store v{} (one home per id)", names_[s],
                   kCurrentVersion);
  }

  const Config& config_;
  BlockingJobStore store_;
  std::vector<std::string> names_;
  std::vector<ShardRole> roles_;
  JobMover mover_;
  std::vector<std::string> left_;  // per shard: why it is not done, "" when it is (or may be)
};

}  // namespace

ScriptCall store_upgrade_call(int limit) {
  return upgrade_call({"buckets", std::to_string(limit)});
}

namespace {

Result<bool> step_result(const redisReply* r, const std::string& shard) {
  if (r->type != REDIS_REPLY_INTEGER) {
    return Status(Code::kInternal, "unexpected reply to store_upgrade from Redis shard " + shard);
  }
  return r->integer == 1;
}

}  // namespace

Result<bool> upgrade_store_step(RedisConnection& shard, int limit) {
  auto reply = shard.run(store_upgrade_call(limit));
  if (!reply.is_ok()) {
    return reply.status();
  }
  return step_result(reply->get(), shard.address().name());
}

void upgrade_store_step(AsyncShard& shard, int limit, std::function<void(Result<bool>)> done) {
  shard.run(store_upgrade_call(limit), [name = shard.address().name(),
                                        done = std::move(done)](Result<const redisReply*> reply) {
    if (!reply.is_ok()) {
      return done(reply.status());
    }
    done(step_result(*reply, name));
  });
}

Status upgrade_stores(const Config& config) { return Upgrade(config).run(); }

Status mark_new_store_current(RedisConnection& shard) {
  auto version = shard.command({"GET", version_key()});
  if (!version.is_ok()) {
    return version.status();
  }
  if ((*version)->type != REDIS_REPLY_NIL) {
    return Status::ok();  // current, or an older store upgrade_stores converts
  }
  auto written = scan_keys(shard, keys::kPrefix + "*");
  if (!written.is_ok()) {
    return written.status();
  }
  if (!written->empty()) {
    return Status::ok();  // a store v2's keys: converted by the upgrade
  }
  // NX: a version written meanwhile is never replaced.
  auto set = shard.command({"SET", version_key(), std::to_string(kCurrentVersion), "NX"});
  return set.is_ok() ? Status::ok() : set.status();
}

}  // namespace dq

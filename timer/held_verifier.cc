// Settling held copies on the timer's loop (see held_verifier.h).
#include "timer/held_verifier.h"

#include <memory>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr int kIdleMs = 200;                // between passes with nothing to settle
constexpr int kBatch = 200;                 // copies looked at per shard per pass
constexpr int64_t kHousekeepingMs = 10000;  // tombstones
// Held sets of shards no longer in the config: looked for at start and then
// every minute, not every 10 s. The walk SCANs the whole keyspace (~98 pages
// of 1,000 keys with store v3, ~0.7 ms of Redis each), and only a process
// still running an older config (an API server during a reload, a dqctl)
// can add to such a set: its copies wait at most this much longer.
constexpr int64_t kUnknownShardsMs = 60000;
constexpr int64_t kTombKeepMs = 7LL * 24 * 3600 * 1000;

}  // namespace

HeldVerifier::HeldVerifier(const Config& config, size_t shard, event_base* base,
                           AsyncJobStore& store)
    : shard_(shard),
      store_(store),
      connections_(store.connections()),
      names_(shard_names(config.shards)) {
  timer_.reset(evtimer_new(base, &HeldVerifier::on_timer, this));
}

void HeldVerifier::start() { pass(); }

void HeldVerifier::on_timer(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  static_cast<HeldVerifier*>(self)->pass();
}

void HeldVerifier::pass() {
  if (!stopping_) {
    settle_next_shard(0, 0);
  }
}

void HeldVerifier::settle_next_shard(size_t other, int settled) {
  if (stopping_) {
    return;
  }
  if (other == shard_) {
    ++other;
  }
  if (other >= names_.size()) {
    return pass_done(settled);
  }
  settle_against(names_[other], true, [this, other, settled](int more) {
    settle_next_shard(other + 1, settled + more);
  });
}

void HeldVerifier::pass_done(int settled) {
  auto next = [this, settled] {
    if (monotonic_ms() >= next_housekeeping_ms_) {
      trim_tombstones();
      next_housekeeping_ms_ = monotonic_ms() + kHousekeepingMs;
    }
    if (stopping_) {
      return;
    }
    if (settled > 0) {
      return pass();  // more may be held: at once
    }
    timeval wait{0, static_cast<suseconds_t>(kIdleMs) * 1000};
    evtimer_add(timer_.get(), &wait);
  };
  if (monotonic_ms() >= next_unknown_shards_ms_) {
    next_unknown_shards_ms_ = monotonic_ms() + kUnknownShardsMs;
    return release_unknown_shards(next);
  }
  next();
}

void HeldVerifier::settle_against(const std::string& against, bool in_config, Settled done) {
  size_t asked = 0;
  if (in_config) {
    while (asked < names_.size() && names_[asked] != against) {
      ++asked;
    }
  }
  store_.held_copies(shard_, against, kBatch,
                     [this, against, in_config, asked,
                      done = std::move(done)](Result<std::vector<HeldCopy>> copies) mutable {
                       if (!copies.is_ok() || copies->empty()) {
                         return done(0);
                       }
                       auto list = std::make_shared<std::vector<HeldCopy>>(std::move(*copies));
                       settle_copies(list, 0, asked, against, in_config, 0, std::move(done));
                     });
}

// One copy at a time: claim.lua on the shard it was held for (in the
// config), then settle.lua here; a shard that does not answer ends the
// batch (it is asked again next pass).
void HeldVerifier::settle_copies(const std::shared_ptr<std::vector<HeldCopy>>& copies, size_t next,
                                 size_t asked, const std::string& against, bool in_config,
                                 int settled, Settled done) {
  if (next >= copies->size() || stopping_) {
    return done(settled);
  }
  const HeldCopy& copy = (*copies)[next];
  auto settle = [this, copies, next, asked, against, in_config, settled,
                 done](const std::string& verdict) mutable {
    const HeldCopy& held = (*copies)[next];
    connections_[shard_]->run(
        settle_call(held.key, held.incarnation, verdict, against, names_),
        [this, copies, next, asked, against, in_config, settled,
         done = std::move(done)](Result<const redisReply*> reply) mutable {
          if (!reply.is_ok()) {
            return done(settled);
          }
          if ((*reply)->type == REDIS_REPLY_INTEGER && (*reply)->integer == 2) {
            err_log().warn(
                "job {} was added on shard {} while shard {} was unreachable, and {} holds "
                "it: the later copy is dropped as a duplicate",
                (*copies)[next].key, names_[shard_], against, against);
          }
          settle_copies(copies, next + 1, asked, against, in_config, settled + 1, std::move(done));
        });
  };
  if (!in_config) {
    return settle("ok");
  }
  connections_[asked]->run(
      claim_call(copy.key, names_[shard_], copy.created_ms),
      [this, copies, next, asked, against, in_config, settled, done,
       settle = std::move(settle)](Result<const redisReply*> claimed) mutable {
        if (!claimed.is_ok()) {
          return done(settled);  // still unreachable: try again later
        }
        if ((*claimed)->type == REDIS_REPLY_INTEGER && (*claimed)->integer == 2) {
          // Still being moved from that shard: asked again next pass.
          return settle_copies(copies, next + 1, asked, against, in_config, settled,
                               std::move(done));
        }
        bool dup = (*claimed)->type == REDIS_REPLY_INTEGER && (*claimed)->integer == 1;
        settle(dup ? "dup" : "ok");
      });
}

// A held set for a shard that was removed from the config: nothing can be
// asked there any more, so its copies are released.
// Found by SCAN, not KEYS: KEYS held Redis for the whole keyspace (14-30 ms
// with store v3's ~98,000 keys per shard).
void HeldVerifier::release_unknown_shards(std::function<void()> done) {
  auto found = std::make_shared<std::vector<std::string>>();
  scan_held("0", found, [this, found, done = std::move(done)](bool ok) mutable {
    auto unknown = std::make_shared<std::vector<std::string>>();
    if (ok) {  // best effort: the next walk tries again
      for (const std::string& key : *found) {
        std::string name = key.substr(keys::held_prefix().size());
        bool known = false;
        for (const auto& each : names_) {
          known = known || each == name;
        }
        if (!known) {
          unknown->push_back(name);
        }
      }
    }
    release_next(unknown, 0, std::move(done));
  });
}

void HeldVerifier::scan_held(const std::string& cursor,
                             const std::shared_ptr<std::vector<std::string>>& found,
                             std::function<void(bool ok)> done) {
  connections_[shard_]->command(
      {"SCAN", cursor, "MATCH", keys::held_prefix() + "*", "COUNT", "1000"},
      [this, found, done = std::move(done)](Result<const redisReply*> page) mutable {
        if (!page.is_ok() || (*page)->type != REDIS_REPLY_ARRAY || (*page)->elements != 2 ||
            (*page)->element[1]->type != REDIS_REPLY_ARRAY || stopping_) {
          return done(false);
        }
        const redisReply* items = (*page)->element[1];
        for (size_t i = 0; i < items->elements; ++i) {
          found->push_back(reply_string(items->element[i]));
        }
        std::string next = reply_string((*page)->element[0]);
        if (next == "0") {
          return done(true);
        }
        scan_held(next, found, std::move(done));
      });
}

void HeldVerifier::release_next(const std::shared_ptr<std::vector<std::string>>& names, size_t next,
                                std::function<void()> done) {
  if (next >= names->size() || stopping_) {
    return done();
  }
  settle_against((*names)[next], false, [this, names, next, done = std::move(done)](int) mutable {
    release_next(names, next + 1, std::move(done));
  });
}

void HeldVerifier::trim_tombstones() {
  // Best effort: the next pass tries again.
  connections_[shard_]->command(
      {"ZREMRANGEBYSCORE", keys::tombs(), "-inf", std::to_string(now_ms() - kTombKeepMs)},
      [](const Result<const redisReply*>&) {});
}

}  // namespace dq

// HeldVerifier: settles the copies one shard holds for others (see
// common/store/placement.h). A job added while a shard S that may hold the same id
// was unreachable waits in {dq}:held:<S> on the shard that took it. Once S
// answers, claim.lua on S says whether S holds (or deleted) the id: then the
// copy is a duplicate and is removed; else S records where the id lives and
// the copy becomes an ordinary delayed job. Held sets of shards no longer in
// the config are released. Also trims old tombstones. One per shard in each
// timer process, asynchronous on its loop, one copy at a time; several
// timers settling the same copy is harmless (settle.lua checks the copy's
// state and incarnation).
#pragma once

#include <event2/event.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/store/async_job_store.h"

namespace dq {

class HeldVerifier {
 public:
  HeldVerifier(const Config& config, size_t shard, event_base* base, AsyncJobStore& store);
  HeldVerifier(const HeldVerifier&) = delete;
  HeldVerifier& operator=(const HeldVerifier&) = delete;

  void start();  // passes until stop()
  void stop() { stopping_ = true; }

 private:
  using Settled = std::function<void(int settled)>;
  static void on_timer(evutil_socket_t fd, short events, void* self);
  // One pass over the other shards, then the housekeeping when due.
  void pass();
  void settle_next_shard(size_t other, int settled);
  void pass_done(int settled);
  // Settles up to a batch of copies held against `against`.
  void settle_against(const std::string& against, bool in_config, Settled done);
  void settle_copies(const std::shared_ptr<std::vector<HeldCopy>>& copies, size_t next,
                     size_t asked, const std::string& against, bool in_config, int settled,
                     Settled done);
  void release_unknown_shards(std::function<void()> done);
  void scan_held(const std::string& cursor, const std::shared_ptr<std::vector<std::string>>& found,
                 std::function<void(bool ok)> done);
  void release_next(const std::shared_ptr<std::vector<std::string>>& names, size_t next,
                    std::function<void()> done);
  void trim_tombstones();

  size_t shard_;
  AsyncJobStore& store_;
  std::vector<AsyncShard*> connections_;
  std::vector<std::string> names_;
  UniqueEvent timer_;
  bool stopping_ = false;
  int64_t next_housekeeping_ms_ = 0;
  int64_t next_unknown_shards_ms_ = 0;
};

}  // namespace dq

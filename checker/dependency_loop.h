// DependencyLoop: the checker's releaser of jobs that wait for other jobs
// (an add's "after": docs/delivery.md, "Dependencies between jobs";
// common/store/dependencies.h). One thread per shard: it claims the events
// of the shard's dependency outbox for a lease (dep_claim.lua), hands each to
// the ended job's waiters on their shards (dep_release.lua: released,
// still waiting for others, or dead-lettered per their topic's
// on_dependency_dead) and removes it (dep_settle.lua); between events it
// blocks on the shard's wake list, which every script that writes an event
// pushes to, so a waiter is released a round trip or two after the ack. It
// also ends the shard's waiting jobs whose own ttl or expire_at passed
// (dep_expire.lua).
//
// Crash-safe: the event is written by the script that ended the job, and
// removed only after every waiter was handled; a releaser killed meanwhile
// leaves it to be claimed again once its lease ends (dep_release.lua
// changes nothing twice). Every checker of every host runs one; the lease
// keeps two from handling the same event at once.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/redis/redis_sync.h"
#include "common/registry/topic_cache.h"
#include "common/store/dependencies.h"

namespace dq {

class DependencyLoop {
 public:
  DependencyLoop(const Config& config, size_t shard);

  // Releases until stop_requested().
  void run();

 private:
  // Hands one event to its waiters, then settles it.
  void handle(const DepEvent& event, int64_t redis_now_ms);
  // dep_release.lua for one waiter: on its home first, then on any other
  // shard (a waiting job is not moved by the shard mover); "missing" when
  // no shard holds it; an error when a shard could not be asked.
  Result<std::string> release(const DepEvent& event, const std::string& waiter);
  void expire_waiting_jobs();

  const Config& config_;
  size_t shard_;
  std::vector<std::unique_ptr<RedisConnection>> shards_;
  std::unique_ptr<RedisConnection> wake_;  // its own connection: BLPOP blocks it
  const TopicCache* topics_ = nullptr;     // run()'s, refreshed each turn
};

}  // namespace dq

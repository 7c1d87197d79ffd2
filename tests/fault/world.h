// World: what one fault scenario runs against (see scenarios.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/fault/callback_faults.h"
#include "tests/fault/load.h"
#include "tests/fault/net_namespace.h"
#include "tests/support/callback_server.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/dqd_process.h"
#include "tests/support/idle_connections.h"
#include "tests/support/redis_server.h"

namespace dq::test {

struct Scenario;

// DQ_FAULT_APPENDFSYNC=always|everysec|no sets the shard's appendfsync (again
// after each restart), to measure what a Redis crash loses under each setting.
void apply_fsync_setting(TestRedis& redis);

// How each slow-shard scenario delays the first shard's traffic.
constexpr int kSlowShardDelayMs = 30;  // each way
// Setup::one_consumer: the one consumer's calls in flight at most.
constexpr int kOneConsumerCalls = 32;

struct World {
  explicit World(const Scenario& scenario);  // everything started, unless skipped

  std::string skipped;  // why the scenario cannot run here; empty when it runs
  // For the partition (and netem): made before the callback server, which
  // then listens on every address so the namespace reaches it.
  std::unique_ptr<NetNamespace> ns;
  TestRedis first;
  TestRedis second;
  CallbackServer callback;
  CallbackFaults faults{callback};
  std::unique_ptr<DelayProxy> proxy;               // a slow first shard without netem
  std::string slowed_by;                           // "netem", "proxy" (slow first shard) or ""
  std::vector<std::string> shards;                 // the shard list the hosts are given
  std::vector<std::unique_ptr<DqdProcess>> hosts;  // hosts[0] has the honest clock
  std::vector<pid_t> noted_pids;                   // a scenario's note of dq's processes
  int64_t fault_at_ms = 0;                         // steady clock: when the fault was injected
  std::string fault_note;                          // what the fault did, for the row
  std::unique_ptr<IdleFlood> flood;                // idle connections a scenario holds open
  std::vector<AcceptedJob> extra_accepted;         // jobs a scenario added itself, counted too
  std::vector<AddAnswer> add_answers;              // the load's, once it stopped

  std::vector<std::string> host_urls() const;
  pid_t master() const { return hosts[0]->pid(); }
  void stall_first_shard(bool on);  // the slow first shard holds everything
  // Ends a fault that would slow down the counting (the slow shard's delay:
  // the suite's GETs of every job would each wait for it).
  void heal();
};

}  // namespace dq::test

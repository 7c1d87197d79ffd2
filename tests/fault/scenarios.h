// The fault suite's scenarios: each builds a world (two Redis shards with
// AOF, one or two dqd hosts with 2 API servers, 2 timers and 3 consumers, a
// callback server), runs a load, injects its fault while the load runs, lets
// things settle and counts every job.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tests/fault/tally.h"

namespace dq::test {

struct World;

// What the world has besides two shards and one honest dqd host.
enum class Setup {
  plain,
  skewed_host,       // a second dqd host whose clock is 10 s ahead
  slow_first_shard,  // the first shard's traffic 30 ms late each way (netem, else a proxy)
  partitioned_host,  // a second dqd host in a network namespace that can be cut off
  log_disk_full,     // the host's log dir is a full tmpfs
  few_descriptors,   // the host runs with an open files limit of 1,024 (soft and hard)
  one_consumer,      // the host runs one consumer of 32 calls, topics with the circuit breaker on
};

struct Scenario {
  std::string name;
  std::vector<std::pair<std::string, CallbackFault>> topics;  // at least two
  Setup setup = Setup::plain;
  bool duplicates_allowed = false;
  std::string why_duplicates;                             // printed in the row when it has any
  std::function<void(World& world, int load_ms)> inject;  // runs while the load does
  // More checks once the jobs are counted (may add to the row's note).
  std::function<void(World& world, const std::vector<AcceptedJob>& accepted, TallyRow& row)> check;
  // The share of load_ms_for_this_run() this scenario's load runs: a fault
  // that needs less time to show keeps the suite short.
  double load_share = 1.0;
  // Set when the fault destroys data (a shard restarted empty): lost jobs
  // are then expected, and `check` must show that dq reported them.
  std::string why_losses;
  // How long the load waits before retrying an add whose outcome is unknown
  // (504, no answer): a producer that backs off retries after its job ran.
  int retry_after_unknown_ms = 100;
  // Producer threads of the load: each has one add (and its retries) open.
  int load_threads = 2;
};

std::vector<Scenario> all_scenarios();

// How long the load runs; shorter under the sanitizers (DQ_SANITIZE set).
int load_ms_for_this_run();

// Runs one scenario (CHECKs lost = 0, early = 0, and duplicates = 0 unless
// allowed) and returns its row. `round` keeps ids apart in soak runs.
TallyRow run_scenario(const Scenario& scenario, int round);

}  // namespace dq::test

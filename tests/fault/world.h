// World: what one fault scenario runs against (see scenarios.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/fault/callback_faults.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/redis_server.h"

namespace dq::test {

struct Scenario;

// DQ_FAULT_APPENDFSYNC=always|everysec|no sets the shard's appendfsync (again
// after each restart), to measure what a Redis crash loses under each setting.
void apply_fsync_setting(TestRedis& redis);

struct World {
  explicit World(const Scenario& scenario);  // everything started

  TestRedis first;
  TestRedis second;
  CallbackServer callback;
  CallbackFaults faults{callback};
  std::vector<std::unique_ptr<DqdProcess>> hosts;  // hosts[0] has the honest clock

  std::vector<std::string> host_urls() const;
  pid_t master() const { return hosts[0]->pid(); }
};

}  // namespace dq::test

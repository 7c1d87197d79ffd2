// SharedDqd: one redis-server and one started dqd on it, meant to be shared
// by a whole test file through a function-local static (starting a dqd costs
// about a second).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/dqd_process.h"
#include "tests/support/redis_server.h"

namespace dq::test {

struct TopicSpec {
  std::string name;
  std::string callback_url = "http://127.0.0.1:9/none";
  int64_t default_delay_s = 0;
  std::string method = "POST";  // or "GET": the callback gets query parameters
  bool online = true;
};

struct SharedDqd {
  // options.shards is set to the redis-server; the topics are registered
  // before dqd starts.
  SharedDqd(DqdOptions options, const std::vector<TopicSpec>& topics);

  std::string server() const;  // "127.0.0.1:HTTP_PORT", for dqctl -s

  TestRedis redis;
  std::unique_ptr<DqdProcess> dqd;
};

}  // namespace dq::test

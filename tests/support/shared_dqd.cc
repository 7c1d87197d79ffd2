// Implements tests/support/shared_dqd.h.
#include "tests/support/shared_dqd.h"

#include <doctest/doctest.h>

#include <utility>

namespace dq::test {

SharedDqd::SharedDqd(DqdOptions options, const std::vector<TopicSpec>& topics) {
  options.shards = {redis.address()};
  dqd = std::make_unique<DqdProcess>(std::move(options));
  for (const auto& topic : topics) {
    dqd->add_topic(topic.name, topic.callback_url, topic.default_delay_s);
    if (topic.method == "POST" && topic.online) {
      continue;
    }
    Topic changed = *dqd->registry().get_topic(topic.name);
    changed.method = topic.method;
    changed.online = topic.online;
    REQUIRE(dqd->registry().update_topic(changed).is_ok());
  }
  dqd->start();
}

std::string SharedDqd::server() const { return "127.0.0.1:" + std::to_string(dqd->http_port()); }

}  // namespace dq::test

// World (see world.h).
#include "tests/fault/world.h"

#include <cstdlib>

#include "tests/fault/scenarios.h"
#include "tests/support/e2e.h"

namespace dq::test {
namespace {

constexpr int kTopicTimeoutMs = 1000;

DqdOptions host_options(const World& world) {
  DqdOptions options;
  options.shards = {world.first.address(), world.second.address()};
  options.workers = 2;
  options.timers = 2;
  options.consumers = 3;
  options.backoff_unit_ms = 200;
  options.drain_timeout_ms = 3000;
  // Short leases and timeouts, so a fault heals within the settle time.
  options.extra_ini =
      "[delivery]\nlease_margin_ms = 500\n"
      "[redis]\ncommand_timeout_ms = 500\nprobe_timeout_ms = 200\n"
      "[checker]\ninterval_ms = 200\n";
  return options;
}

// faketime preloads libfaketime; a sanitizer build must be told that is fine.
std::vector<std::string> ahead_by_10s() {
  const char* asan = std::getenv("ASAN_OPTIONS");
  return {"env", std::string("ASAN_OPTIONS=") + (asan ? asan : "") + ":verify_asan_link_order=0",
          "faketime", "-f", "+10s"};
}

}  // namespace

void apply_fsync_setting(TestRedis& redis) {
  if (const char* fsync = std::getenv("DQ_FAULT_APPENDFSYNC")) {
    redis.command({"CONFIG", "SET", "appendfsync", fsync});
  }
}

World::World(const Scenario& scenario) {
  apply_fsync_setting(first);
  apply_fsync_setting(second);
  DqdOptions options = host_options(*this);
  hosts.push_back(std::make_unique<DqdProcess>(options));
  if (scenario.skewed_host) {
    options.wrapper = ahead_by_10s();
    hosts.push_back(std::make_unique<DqdProcess>(options));
  }
  for (const auto& [topic, fault] : scenario.topics) {
    std::string url = faults.url_for(topic, fault);
    for (auto& host : hosts) register_topic(*host, topic, url, kTopicTimeoutMs);
  }
  for (auto& host : hosts) host->start();
}

std::vector<std::string> World::host_urls() const {
  std::vector<std::string> urls;
  for (const auto& host : hosts) urls.push_back(host->base_url());
  return urls;
}

}  // namespace dq::test

// World (see world.h).
#include "tests/fault/world.h"

#include <unistd.h>

#include <cstdlib>

#include "tests/fault/scenarios.h"
#include "tests/support/e2e.h"

namespace dq::test {
namespace {

constexpr int kTopicTimeoutMs = 1000;
constexpr int kLongTopicTimeoutMs = 20000;

DqdOptions host_options(const World& world) {
  DqdOptions options;
  options.shards = world.shards;
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

std::vector<std::string> ahead_by_10s() { return clock_ahead_wrapper("+10s"); }

// Runs dqd in a mount namespace of its own where `log_dir` is a 256 KiB
// tmpfs filled to the last block before dqd starts: every log write fails
// with ENOSPC, and nothing outside sees the mount (it goes with dqd).
std::vector<std::string> on_a_full_log_disk(const std::string& log_dir) {
  return {"unshare",
          "-m",
          "--propagation",
          "private",
          "sh",
          "-c",
          "mkdir -p '" + log_dir + "' && mount -t tmpfs -o size=256k dq-log-full '" + log_dir +
              "' || exit 97; dd if=/dev/zero of='" + log_dir +
              "/filler' bs=4k 2>/dev/null; exec \"$@\"",
          "dq-log-full"};
}

bool wants_namespace(Setup setup) {
  static const bool netem = netem_available();
  return setup == Setup::partitioned_host || (setup == Setup::slow_first_shard && netem);
}

std::unique_ptr<NetNamespace> namespace_for(Setup setup, std::string* skipped) {
  if (!wants_namespace(setup)) {
    return nullptr;
  }
  return NetNamespace::create(skipped);
}

// With a namespace, callbacks go to the outside address, which the hosts on
// both sides reach (the callback server listens on every address): the hosts
// share one registry (the default [registry] shared = yes), so a topic has
// one callback URL for all of them, and 127.0.0.1 inside the namespace is the
// namespace's own loopback, where nothing listens.
std::string reachable_from(const std::string& url, const NetNamespace* ns) {
  if (!ns) {
    return url;
  }
  std::string local = "127.0.0.1";
  return url.substr(0, url.find(local)) + ns->outside_ip() +
         url.substr(url.find(local) + local.size());
}

}  // namespace

// The shards fsync every write (appendfsync always), as the Redis dqd starts
// itself does: with everysec a kill -9 of Redis on a busy disk lost acknowledged
// adds (docs/RELIABILITY.md). DQ_FAULT_APPENDFSYNC=everysec shows that window.
void apply_fsync_setting(TestRedis& redis) {
  const char* fsync = std::getenv("DQ_FAULT_APPENDFSYNC");
  redis.command({"CONFIG", "SET", "appendfsync", fsync != nullptr ? fsync : "always"});
}

World::World(const Scenario& scenario)
    : ns(namespace_for(scenario.setup, &skipped)), callback(ns ? "0.0.0.0" : "127.0.0.1") {
  if (scenario.setup == Setup::partitioned_host && !ns) {
    return;  // skipped says why
  }
  skipped.clear();  // a slow shard without a namespace is slowed by the proxy
  if (scenario.setup == Setup::log_disk_full && geteuid() != 0) {
    skipped = "not root: cannot mount a tmpfs for the log dir";
    return;
  }
  apply_fsync_setting(first);
  apply_fsync_setting(second);
  for (TestRedis* redis : {&first, &second}) {
    if (ns) {
      redis->command({"CONFIG", "SET", "bind", "127.0.0.1 " + ns->outside_ip()});
      shards.push_back(ns->outside_ip() + ":" + std::to_string(redis->port()));
    } else {
      shards.push_back(redis->address());
    }
  }
  if (scenario.setup == Setup::slow_first_shard) {
    if (ns) {
      std::string error;
      REQUIRE_MESSAGE(ns->netem(first.port(), kSlowShardDelayMs, false, &error), error);
      slowed_by = "netem";
    } else {
      proxy = std::make_unique<DelayProxy>(first.port(), kSlowShardDelayMs);
      shards[0] = proxy->address();
      slowed_by = "proxy";
    }
  }
  DqdOptions options = host_options(*this);
  if (scenario.setup == Setup::slow_first_shard && ns) {
    options.wrapper = ns->exec_prefix();
    options.listen_host = ns->inside_ip();
  }
  hosts.push_back(std::make_unique<DqdProcess>(options));
  if (scenario.setup == Setup::log_disk_full) {
    options.wrapper = on_a_full_log_disk(hosts[0]->log_dir());
    hosts[0]->rewrite_config(options);
  }
  if (scenario.setup == Setup::few_descriptors) {
    options.wrapper = {"prlimit", "--nofile=1024:1024"};
    hosts[0]->rewrite_config(options);
  }
  if (scenario.setup == Setup::one_consumer) {
    options.consumers = 1;
    options.consumer_concurrency = kOneConsumerCalls;
    hosts[0]->rewrite_config(options);
  }
  if (scenario.setup == Setup::skewed_host) {
    options.wrapper = ahead_by_10s();
    hosts.push_back(std::make_unique<DqdProcess>(options));
  }
  if (scenario.setup == Setup::partitioned_host) {
    options.wrapper = ns->exec_prefix();
    options.listen_host = ns->inside_ip();
    hosts.push_back(std::make_unique<DqdProcess>(options));
  }
  for (const auto& [topic, fault] : scenario.topics) {
    std::string url = faults.url_for(topic, fault);
    for (auto& host : hosts) {
      // A 12 s callback needs a topic timeout above it.
      int timeout_ms = fault == CallbackFault::takes12s ? kLongTopicTimeoutMs : kTopicTimeoutMs;
      register_topic(*host, topic, reachable_from(url, ns.get()), timeout_ms);
      if (scenario.setup == Setup::one_consumer) {
        // The receiver's circuit is watched: a pause must not open it.
        Topic settings = *host->registry().get_topic(topic);
        settings.circuit_breaker = true;
        settings.circuit_failures = 5;
        REQUIRE(host->registry().update_topic(settings).is_ok());
      }
    }
  }
  for (auto& host : hosts) {
    host->start();
  }
}

std::vector<std::string> World::host_urls() const {
  std::vector<std::string> urls;
  for (const auto& host : hosts) {
    urls.push_back(host->base_url());
  }
  return urls;
}

void World::heal() {
  if (proxy) {
    proxy->set_delay(0);
  }
  if (ns && slowed_by == "netem") {
    std::string error;
    CHECK_MESSAGE(ns->netem(first.port(), 0, false, &error), error);
  }
}

void World::stall_first_shard(bool on) {
  if (proxy) {
    proxy->stall(on);
  }
  if (ns && slowed_by == "netem") {
    std::string error;
    CHECK_MESSAGE(ns->netem(first.port(), kSlowShardDelayMs, on, &error), error);
  }
}

}  // namespace dq::test

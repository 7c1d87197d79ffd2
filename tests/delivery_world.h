// DeliveryWorld: the end-to-end setting of the delivery tests: a real
// redis-server, a registry in a temp dir, a real HTTP callback server, and
// timer / consumer roles running in forked children.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/config.h"
#include "common/registry/registry.h"
#include "common/store/job_store.h"
#include "consumer/consumer.h"
#include "tests/support/callback_server.h"
#include "tests/support/redis_server.h"
#include "tests/support/role_process.h"
#include "timer/timer.h"

namespace dq::test {

class DeliveryWorld {
 public:
  explicit DeliveryWorld(int64_t backoff_unit_ms = 300) : dir_(make_temp_dir("dq-delivery")) {
    config_.path = dir_ + "/dq.ini";
    config_.shards = {redis_.shard()};
    config_.sqlite_path = dir_ + "/dq.db";
    config_.log_dir = dir_ + "/log";
    config_.backoff_unit_ms = backoff_unit_ms;
    config_.lease_margin_ms = 500;
    config_.registry_refresh_ms = 200;
    config_.consumer_concurrency = 64;
    auto registry = Registry::open(config_.sqlite_path);
    REQUIRE(registry.is_ok());
    registry_ = std::move(*registry);
  }
  ~DeliveryWorld() {
    roles_.clear();
    remove_dir(dir_);
  }

  Config& config() { return config_; }
  Registry& registry() { return *registry_; }
  TestRedis& redis() { return redis_; }
  CallbackServer& callback() { return callback_; }
  const std::string& dir() const { return dir_; }

  Topic topic(const std::string& name, const std::string& path = "/callback") {
    Topic topic;
    topic.name = name;
    topic.callback_url = callback_.url(path);
    topic.timeout_ms = 2000;
    // Suites using this test retries and dead letters with receivers that fail
    // on purpose: the circuit breaker (tests/test_circuit_breaker.cc) is off.
    topic.circuit_breaker = false;
    topic.created_at_ms = topic.updated_at_ms = now_ms();
    return topic;
  }
  void add_topic(const Topic& topic) { REQUIRE(registry_->add_topic(topic).is_ok()); }

  JobStore& store() {
    if (!store_) store_ = std::make_unique<JobStore>(config_);
    return *store_;
  }
  void add_job(const std::string& topic, const std::string& id, int64_t due_ms,
               const std::string& body = "{\"n\":1}") {
    auto added = store().add(topic, id, body, DueTime{false, due_ms});
    REQUIRE_MESSAGE(added.is_ok(), added.status().message());
  }

  RoleProcess& start_timer(int index = 0) {
    roles_.push_back(std::make_unique<RoleProcess>(&run_timer, config_, index,
                                                   "dq-timer_" + std::to_string(index)));
    return *roles_.back();
  }
  RoleProcess& start_consumer(int index = 0) {
    roles_.push_back(std::make_unique<RoleProcess>(&run_consumer, config_, index,
                                                   "dq-consume_" + std::to_string(index)));
    return *roles_.back();
  }
  void stop_all() { roles_.clear(); }

 private:
  TestRedis redis_;
  std::string dir_;
  Config config_;
  std::unique_ptr<Registry> registry_;
  CallbackServer callback_;
  std::unique_ptr<JobStore> store_;
  std::vector<std::unique_ptr<RoleProcess>> roles_;
};

}  // namespace dq::test

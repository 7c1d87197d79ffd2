// The fault suite's scenarios (see scenarios.h).
#include "tests/fault/scenarios.h"

#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <set>

#include "tests/fault/world.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"

namespace dq::test {
namespace {

constexpr int kSettleMs = 30000;  // the longest a scenario waits for its deliveries

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Calls `step(i)` every `every_ms` until `for_ms` have passed.
template <typename Step>
void every(int every_ms, int for_ms, Step step) {
  int64_t end = steady_ms() + for_ms;
  for (int i = 0; steady_ms() < end; ++i) {
    step(i);
    sleep_ms(every_ms);
  }
}

const std::vector<std::pair<std::string, CallbackFault>> kPlainTopics = {
    {"alpha", CallbackFault::none}, {"beta", CallbackFault::slow}};

void kill_children_in_turn(World& world, int load_ms) {
  const char* kinds[] = {"dq-server_", "dq-timer_", "dq-consume_", "dq-redis-checker"};
  every(250, load_ms, [&](int i) {
    std::vector<pid_t> pids = children_titled(world.master(), kinds[i % 4]);
    if (!pids.empty()) kill(pids[(i / 4) % pids.size()], SIGKILL);
  });
}

void kill_master_and_restart(World& world, int load_ms) {
  for (int round = 0; round < 2; ++round) {
    sleep_ms(load_ms / 3);
    world.hosts[0]->kill9();
    world.hosts[0]->start();  // at once: waits until it answers /healthz
  }
  sleep_ms(load_ms / 3);
}

void kill_redis_and_restart(World& world, int load_ms) {
  for (TestRedis* redis : {&world.first, &world.second}) {
    sleep_ms(load_ms / 4);
    redis->kill9();
    sleep_ms(500);
    redis->start();  // same port, same AOF
    apply_fsync_setting(*redis);
  }
  sleep_ms(load_ms / 4);
}

void stop_one_shard_for_a_while(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  world.first.stop();
  sleep_ms(load_ms * 3 / 5);
  world.first.start();
  apply_fsync_setting(world.first);
  sleep_ms(load_ms / 5);
}

void hang_one_shard(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  kill(world.second.pid(), SIGSTOP);
  sleep_ms(load_ms * 3 / 5);
  kill(world.second.pid(), SIGCONT);
  sleep_ms(load_ms / 5);
}

void reload_in_a_loop(World& world, int load_ms) {
  every(400, load_ms, [&](int) { kill(world.master(), SIGUSR2); });
}

void just_load(World&, int load_ms) { sleep_ms(load_ms); }

// Keys of accepted jobs that dq still holds (GET is not 404), asked through
// the honest host until none is left or 5 s passed (acks may still land).
std::set<std::string> still_held(World& world, const std::vector<AcceptedJob>& accepted) {
  std::set<std::string> held;
  for (const auto& job : accepted) held.insert(job.key);
  HttpClient http;
  wait_until(5000, [&] {
    for (auto it = held.begin(); it != held.end();) {
      size_t slash = it->find('/');
      std::string url =
          world.hosts[0]->jobs_url(it->substr(0, slash)) + "/" + it->substr(slash + 1);
      it = http.get(url).status == 404 ? held.erase(it) : std::next(it);
    }
    return held.empty();
  });
  return held;
}

bool all_delivered(const World& world, const std::vector<AcceptedJob>& accepted) {
  std::set<std::string> answered;
  for (const auto& arrival : world.faults.arrivals()) {
    if (arrival.status >= 200 && arrival.status < 300) answered.insert(arrival.key);
  }
  for (const auto& job : accepted) {
    if (!answered.count(job.key)) return false;
  }
  return true;
}

}  // namespace

int load_ms_for_this_run() { return std::getenv("DQ_SANITIZE") ? 2500 : 4000; }

std::vector<Scenario> all_scenarios() {
  const char* consumer_killed =
      "a consumer killed after a 2xx, before its ack: the lease expires, the job goes out again";
  const char* ack_lost =
      "acks to a dead or hung shard fail (outcome unknown): the lease expires, the job goes out "
      "again";
  return {
      {"kill -9 children", kPlainTopics, false, true, consumer_killed, kill_children_in_turn},
      {"kill -9 master, restart", kPlainTopics, false, false, "", kill_master_and_restart},
      {"kill -9 redis, restart", kPlainTopics, false, true, ack_lost, kill_redis_and_restart},
      {"one shard of 2 down", kPlainTopics, false, true, ack_lost, stop_one_shard_for_a_while},
      {"one shard of 2 hung", kPlainTopics, false, true, ack_lost, hang_one_shard},
      {"callbacks misbehave",
       {{"e500", CallbackFault::error500},
        {"e429", CallbackFault::busy429},
        {"hang", CallbackFault::hang},
        {"hangup", CallbackFault::hang_up},
        {"redirect", CallbackFault::redirect},
        {"slow", CallbackFault::slow}},
       false,
       false,
       "",
       just_load},
      {"USR2 reloads in a loop", kPlainTopics, false, false, "", reload_in_a_loop},
      {"2nd host clock +10s", kPlainTopics, true, false, "", just_load},
  };
}

TallyRow run_scenario(const Scenario& scenario, int round) {
  int64_t started = steady_ms();
  World world(scenario);
  std::vector<std::string> topics;
  for (const auto& topic : scenario.topics) topics.push_back(topic.first);
  Load load(world.host_urls(), topics, "r" + std::to_string(round) + "-");
  load.start();
  scenario.inject(world, load_ms_for_this_run());
  load.stop();
  std::vector<AcceptedJob> accepted = load.accepted();
  wait_until(kSettleMs, [&] { return all_delivered(world, accepted); });
  sleep_ms(700);  // a duplicate on its way shows up by now
  std::set<std::string> held = still_held(world, accepted);
  TallyRow row = tally(scenario.name, accepted, world.faults.arrivals(), held);
  row.given_up = static_cast<size_t>(load.given_up());
  row.seconds = static_cast<double>(steady_ms() - started) / 1000.0;
  if (row.duplicated > 0) {
    row.note = scenario.duplicates_allowed ? "dups allowed: " + scenario.why_duplicates
                                           : "DUPLICATES NOT ALLOWED HERE";
  }
  if (row.lost > 0 || row.early > 0) row.note = "FAILED; " + row.note;
  CAPTURE(scenario.name);
  CHECK(row.accepted > 0);
  CHECK(row.lost == 0);
  CHECK(row.early == 0);
  if (!scenario.duplicates_allowed) CHECK(row.duplicated == 0);
  return row;
}

}  // namespace dq::test

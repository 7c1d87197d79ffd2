// The shard-state scenarios (see shard_states.h).
#include "tests/fault/shard_states.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/redis/redis_sync.h"
#include "common/redis/shard_health.h"
#include "tests/fault/world.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"

namespace dq::test {
namespace {

constexpr auto npos = std::string::npos;

int64_t steady_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string info_field(TestRedis& redis, const std::string& section, const std::string& field) {
  RedisConnection connection(redis.shard(), 1000, 2000);
  auto info = connection.command({"INFO", section});
  if (!info.is_ok()) {
    return "";
  }
  std::string text((*info)->str, (*info)->len);
  size_t at = text.find(field + ":");
  if (at == std::string::npos) {
    return "";
  }
  size_t start = at + field.size() + 1;
  return text.substr(start, text.find('\r', start) - start);
}

// The checker calls the first shard down for refusing writes (within 5 s).
void expect_checker_refusal(World& world) {
  bool seen = wait_until(5000, [&] {
    auto report = read_shard_health(world.hosts[0]->dir() + "/dqd.pid");
    const CheckedShard* first = report.is_ok() ? report->find(world.shards[0]) : nullptr;
    return first != nullptr && !first->up && first->refuses_writes;
  });
  CHECK_MESSAGE(seen, "the checker did not see the first shard refuse writes");
}

// Sleeps what is left of `ms` since `started`.
void sleep_rest(int64_t started, int ms) {
  sleep_ms(std::max<int>(0, ms - static_cast<int>(steady_clock_ms() - started)));
}

}  // namespace

void fill_first_shard_for_a_while(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  world.first.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  world.first.command({"CONFIG", "SET", "maxmemory", "1"});
  int64_t started = steady_clock_ms();
  expect_checker_refusal(world);
  sleep_rest(started, load_ms * 3 / 5);
  world.first.command({"CONFIG", "SET", "maxmemory", "0"});
  sleep_ms(load_ms / 5);
}

void first_shard_read_only_for_a_while(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  TestRedis spare;
  const std::string first_port = std::to_string(world.first.port());
  spare.command({"REPLICAOF", "127.0.0.1", first_port});
  REQUIRE(wait_until(
      10000, [&] { return info_field(spare, "replication", "master_link_status") == "up"; }));
  // Writes wait (clients blocked, at most 3 s) while the spare catches up
  // and the roles swap, so no write is left behind on either side.
  world.first.command({"CLIENT", "PAUSE", "3000", "WRITE"});
  REQUIRE(wait_until(3000, [&] {
    return info_field(spare, "replication", "master_repl_offset") ==
           info_field(world.first, "replication", "master_repl_offset");
  }));
  spare.command({"REPLICAOF", "NO", "ONE"});
  world.first.command({"REPLICAOF", "127.0.0.1", std::to_string(spare.port())});
  world.first.command({"CLIENT", "UNPAUSE"});
  REQUIRE(wait_until(
      10000, [&] { return info_field(world.first, "replication", "master_link_status") == "up"; }));
  int64_t started = steady_clock_ms();
  expect_checker_refusal(world);
  sleep_rest(started, load_ms * 3 / 5);
  world.first.command({"REPLICAOF", "NO", "ONE"});
  sleep_ms(load_ms / 5);
}

void restart_first_shard_empty(World& world, int load_ms) {
  sleep_ms(load_ms / 3);
  world.first.kill9();
  for (const auto& entry : std::filesystem::directory_iterator(world.first.dir())) {
    std::filesystem::remove_all(entry.path());
  }
  world.first.start();
  apply_fsync_setting(world.first);
  sleep_ms(load_ms * 2 / 3);
}

ScenarioCheck refusal_seen(const std::string& redis_word) {
  return [redis_word](World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
    // The checker's verdict, in the host's err log.
    size_t verdicts = 0;
    for (const auto& entry : std::filesystem::directory_iterator(world.hosts[0]->log_dir())) {
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        verdicts += line.find("checker: Redis shard " + world.shards[0] + " is down") != npos &&
                    line.find(redis_word) != npos;
      }
    }
    // No add answered 500 (503: an add whose home was the refusing shard).
    HttpClient http;
    std::istringstream page(http.get(world.hosts[0]->base_url() + "/metrics").body);
    double refused = 0;
    double server_errors = 0;
    for (std::string line; std::getline(page, line);) {
      if (line.rfind("dq_http_requests_total{", 0) != 0 || line.find("route=\"add\"") == npos) {
        continue;
      }
      double n = std::stod(line.substr(line.rfind(' ') + 1));
      refused += line.find("code=\"503\"") != npos ? n : 0;
      server_errors += line.find("code=\"500\"") != npos ? n : 0;
    }
    std::ostringstream note;
    note << "checker: down (" << redis_word << ") " << verdicts << "x; adds answered 503 "
         << refused << ", 500 " << server_errors;
    row.note += (row.note.empty() ? "" : "; ") + note.str();
    CHECK(server_errors == 0);
  };
}

void data_loss_reported(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  CheckedShard seen;
  bool reported = wait_until(5000, [&] {
    auto report = read_shard_health(world.hosts[0]->dir() + "/dqd.pid");
    if (!report.is_ok() || report->find(world.shards[0]) == nullptr) {
      return false;
    }
    seen = *report->find(world.shards[0]);
    return seen.data_lost_total > 0;
  });
  std::ostringstream note;
  note << "lost " << row.lost << "; the checker reported " << seen.data_lost_total
       << " loss(es) of the " << seen.lost_jobs << " job(s) it had counted on the shard";
  row.note += (row.note.empty() ? "" : "; ") + note.str();
  CHECK_MESSAGE(reported, note.str());
  CHECK(seen.data_lost_total == 1);
  CHECK(seen.lost_jobs > 0);
  // Jobs added in the checker's last interval before the kill were not yet
  // counted, so more may be lost than counted: the row shows both.
}

}  // namespace dq::test

// The shard-state scenarios (see shard_states.h).
#include "tests/fault/shard_states.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "common/redis_sync.h"
#include "common/shard_health.h"
#include "tests/fault/world.h"
#include "tests/support/e2e.h"

namespace dq::test {
namespace {

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

}  // namespace

void fill_first_shard_for_a_while(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  world.first.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  world.first.command({"CONFIG", "SET", "maxmemory", "1"});
  sleep_ms(load_ms * 3 / 5);
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
  sleep_ms(load_ms * 3 / 5);
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

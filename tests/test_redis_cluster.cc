// Redis Cluster as dq's shards: slot computation and redirect parsing
// against a real cluster, and dqd on a real 3-primary + 3-replica cluster
// (virtual shards "{dq:N}" routed to the node owning each tag's slot).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/core/cluster_shards.h"
#include "common/core/json.h"
#include "common/core/shard.h"
#include "common/redis/cluster_slot.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_cluster.h"

using dq::Json;
using namespace dq::test;

namespace {

// A deadline to wait on, not a promise: CI runs two suites at once under
// AddressSanitizer, where a failover or a reshard can take many seconds.
// Waits end as soon as their condition holds.
constexpr int kGenerousMs = 120000;

// A real cluster and a dqd (one timer, one consumer) on it, with one topic
// calling back a real callback server.
struct ClusterWorld {
  explicit ClusterWorld(const std::string& topic, const std::string& extra_ini = "") {
    dqd = std::make_unique<DqdProcess>(one_timer_one_consumer({cluster.shard_entry()}, extra_ini));
    register_topic(*dqd, topic, callback.url());
    dqd->start();
  }

  TestCluster cluster;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
};

struct Tally {
  size_t lost = 0;   // accepted, never delivered
  size_t twice = 0;  // accepted, delivered more than once
};

// Waits until the callback had as many calls as jobs were accepted, and a
// little longer (a duplicate would come then); counts the accepted ones.
Tally tally_deliveries(const CallbackServer& callback, const std::vector<std::string>& accepted) {
  CHECK(callback.wait_for(accepted.size(), kGenerousMs));
  sleep_ms(1500);
  auto by_id = deliveries_by_id(callback);
  Tally tally;
  for (const auto& id : accepted) {
    auto found = by_id.find(id);
    tally.lost += found == by_id.end();
    tally.twice += found != by_id.end() && found->second > 1;
  }
  MESSAGE("accepted ", accepted.size(), ", lost ", tally.lost, ", delivered twice ", tally.twice);
  return tally;
}

// Keys of dq's virtual shards on one node.
long long dq_keys_on(TestRedis& node) {
  long long count = 0;
  std::string cursor = "0";
  do {
    dq::ReplyPtr page = node.command({"SCAN", cursor, "MATCH", "{dq:*", "COUNT", "1000"});
    cursor = std::string(page->element[0]->str, page->element[0]->len);
    count += static_cast<long long>(page->element[1]->elements);
  } while (cursor != "0");
  return count;
}

}  // namespace

TEST_CASE("cluster entries parse into 16 virtual shards with their own tags") {
  auto shards = dq::parse_shard_list("cluster://127.0.0.1:7000, 127.0.0.1:7001");
  REQUIRE(shards.is_ok());
  REQUIRE(shards->size() == static_cast<size_t>(dq::kClusterVirtualShards));
  CHECK((*shards)[0].key_tag() == "{dq:0}");
  CHECK((*shards)[15].key_tag() == "{dq:15}");
  CHECK((*shards)[3].name() == "cluster.3");
  CHECK((*shards)[3].cluster_seeds.size() == 2);
  CHECK(dq::parse_shard_list("127.0.0.1:7000")->at(0).key_tag() == "{dq}");
  CHECK_FALSE(dq::parse_shard_list("127.0.0.1:6379,cluster://127.0.0.1:7000").is_ok());
  CHECK_FALSE(dq::parse_shard_list("cluster://").is_ok());
  CHECK_FALSE(dq::parse_shard_list("cluster://nohost").is_ok());
}

TEST_CASE("redirects and retagging") {
  auto moved = dq::parse_redirect("MOVED 3999 127.0.0.1:6381");
  REQUIRE(moved);
  CHECK_FALSE(moved->ask);
  CHECK(moved->slot == 3999);
  CHECK(moved->host == "127.0.0.1");
  CHECK(moved->port == 6381);
  auto ask = dq::parse_redirect("ASK 12 :7002");
  REQUIRE(ask);
  CHECK(ask->ask);
  CHECK(ask->host.empty());
  CHECK_FALSE(dq::parse_redirect("ERR wrong"));
  CHECK_FALSE(dq::parse_redirect("MOVED x 1:2"));
  CHECK(dq::is_cluster_retry("TRYAGAIN Multiple keys request during rehashing of slot"));

  // Scripts: only KEYS move; an ARGV (a body) that looks like a key stays.
  auto script =
      dq::retag_command({"EVALSHA", "abc", "2", "{dq}:jobs:", "{dq}:due", "{dq}:x"}, "{dq:7}");
  CHECK(script ==
        std::vector<std::string>{"EVALSHA", "abc", "2", "{dq:7}:jobs:", "{dq:7}:due", "{dq}:x"});
  auto function = dq::retag_command({"FCALL", "dq_x_add", "1", "{dq}:jobs:", "{dq}:due"}, "{dq:7}");
  CHECK(function == std::vector<std::string>{"FCALL", "dq_x_add", "1", "{dq:7}:jobs:", "{dq}:due"});
  auto plain = dq::retag_command({"SCAN", "0", "MATCH", "{dq}:jobs:*"}, "{dq:7}");
  CHECK(plain[3] == "{dq:7}:jobs:*");
  CHECK(dq::retag_command({"GET", "{dq}:a"}, "{dq}")[1] == "{dq}:a");
  CHECK(dq::retag_command({"GET", "{dqx}:a"}, "{dq:1}")[1] == "{dqx}:a");
}

TEST_CASE("3 primaries + 3 replicas: 10,000 jobs land on every primary, each delivered once") {
  ClusterWorld world("c");
  TestRedis& any = *world.cluster.nodes()[0];

  // The slot function agrees with Redis's own.
  for (std::string key : {"foo", "{dq}:jobs", "{dq:0}:due", "{dq:15}:x", "a{}b", "{}{x}",
                          "{user1000}.following", "x{y", ""}) {
    CAPTURE(key);
    CHECK(dq::key_slot(key) == any.command({"CLUSTER", "KEYSLOT", key})->integer);
  }

  TestCluster& cluster = world.cluster;
  CallbackServer& callback = world.callback;
  DqdProcess& dqd = *world.dqd;
  HttpClient http;
  const int jobs = 10000;
  int accepted = 0;
  int retried = 0;
  for (int start = 0; start < jobs; start += 500) {
    // A 503 wrote nothing and a 504 is safe to send again (same id, same
    // body): the producer's rule. Right after start, or on a loaded machine,
    // a virtual shard may still be finding its node.
    std::vector<int> pending;
    for (int i = start; i < start + 500; ++i) {
      pending.push_back(i);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
      Json batch = Json::array();
      for (int i : pending) {
        batch.push_back(
            Json{{"id", "j" + std::to_string(i)}, {"body", Json{{"i", i}}}, {"delay", 4}});
      }
      auto answer =
          http.request("POST", dqd.jobs_url("c") + "/batch", Json{{"jobs", batch}}.dump(), 30000);
      REQUIRE_MESSAGE(answer.status == 200, answer.body);
      Json parsed = answer.json();
      std::vector<int> again;
      size_t n = 0;
      for (const auto& result : parsed["results"]) {
        int status = result["status"].get<int>();
        if (status == 201 || status == 200) {
          ++accepted;
        } else {
          REQUIRE_MESSAGE((status == 503 || status == 504), result.dump());
          again.push_back(pending[n]);
        }
        ++n;
      }
      retried += static_cast<int>(again.size());
      pending.swap(again);
      if (!pending.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
  }
  MESSAGE("adds sent again after a 503 or 504: " << retried);
  CHECK(accepted == jobs);

  // Every primary holds dq keys (5, 6 and 5 of the 16 tags by slot).
  auto primaries = cluster.primaries();
  REQUIRE(primaries.size() == 3);
  for (TestRedis* primary : primaries) {
    long long keys = dq_keys_on(*primary);
    MESSAGE("primary ", primary->address(), ": ", keys, " dq keys");
    CHECK(keys > 100);
  }

  CHECK(callback.wait_for(jobs, kGenerousMs));
  sleep_ms(1500);  // a duplicate would come now
  auto by_id = deliveries_by_id(callback);
  int once = 0;
  int twice = 0;
  for (const auto& [id, count] : by_id) {
    once += count == 1;
    twice += count > 1;
  }
  MESSAGE("accepted ", accepted, ", delivered once ", once, ", more than once ", twice,
          ", callbacks ", callback.count());
  CHECK(once == jobs);
  CHECK(twice == 0);
  CHECK(callback.count() == static_cast<size_t>(jobs));
}

TEST_CASE(
    "a primary killed during adds with wait_replicas = 1: its replica takes over, no 201 lost") {
  ClusterWorld world("k", "[redis]\nwait_replicas = 1\nwait_timeout_ms = 1000\n");
  TestCluster& cluster = world.cluster;
  DqdProcess& dqd = *world.dqd;

  // The primary that owns {dq:0}'s slot goes.
  TestRedis* victim = nullptr;
  std::string owner_port;
  {
    dq::ReplyPtr slots = cluster.nodes()[0]->command({"CLUSTER", "SLOTS"});
    auto owner = dq::slot_owner(slots.get(), dq::key_slot("{dq:0}"));
    REQUIRE(owner);
    for (TestRedis* node : cluster.nodes()) {
      if (node->port() == owner->port) {
        victim = node;
      }
    }
  }
  REQUIRE(victim != nullptr);

  HttpClient http;
  std::map<long, int> answers;
  std::vector<std::string> accepted;
  int n = 0;
  // One add, counted; its answer's status.
  auto add_one = [&] {
    std::string id = "k" + std::to_string(n++);
    auto answer = http.request("POST", dqd.jobs_url("k"), job_doc(id, Json{{"n", n}}, 2), 10000);
    ++answers[answer.status];
    if (answer.status == 201) {
      accepted.push_back(id);
    }
    return answer.status;
  };
  auto add_for = [&](int64_t ms) {
    int64_t until = wall_ms() + ms;
    while (wall_ms() < until) {
      add_one();
    }
  };
  add_for(2000);
  victim->kill9();
  int64_t killed = wall_ms();
  // Adds go on until the replica was promoted and every virtual shard takes
  // adds again (the old primary, back as a replica, answers WAIT).
  // The cluster promotes the victim's replica (cluster-node-timeout 2 s).
  bool promoted = wait_within(kGenerousMs, [&] { return cluster.primaries().size() == 3; });
  MESSAGE("replica promoted ", wall_ms() - killed, " ms after the kill");
  if (!promoted) {
    for (TestRedis* node : cluster.nodes()) {
      if (node != victim) {
        dq::ReplyPtr nodes = node->command({"CLUSTER", "NODES"});
        MESSAGE(node->address(), " sees:\n", std::string(nodes->str, nodes->len));
        break;
      }
    }
    for (TestRedis* node : cluster.nodes()) {
      std::string out;
      run_command({"/usr/bin/tail", "-n", "12", node->dir() + "/redis.log"}, &out);
      MESSAGE(node->address(), " log:\n", out);
    }
  }
  REQUIRE(promoted);
  add_for(2000);
  // Back as a replica of the promoted one, so its shards' WAIT 1 can answer.
  victim->start();
  int streak = 0;
  bool recovered = wait_within(kGenerousMs, [&] {
    // 40 successes in a row: every virtual shard took some, most likely.
    streak = add_one() == 201 ? streak + 1 : 0;
    return streak >= 40;
  });
  MESSAGE("every shard takes adds again ", wall_ms() - killed, " ms after the kill");
  CHECK(recovered);
  // Restarted, it names itself primary until the others tell it otherwise.
  auto victim_demoted = [&] {
    auto primaries_now = cluster.primaries();
    return std::find(primaries_now.begin(), primaries_now.end(), victim) == primaries_now.end();
  };
  wait_within(kGenerousMs, victim_demoted);
  CHECK(victim_demoted());
  add_for(1000);
  for (const auto& [status, count] : answers) {
    MESSAGE("answer ", status, ": ", count);
    CHECK((status == 201 || status == 503 || status == 504));
  }
  Tally tally = tally_deliveries(world.callback, accepted);
  CHECK(tally.lost == 0);
}

TEST_CASE("redis-cli --cluster reshard moves 300 slots during adds and deliveries") {
  ClusterWorld world("r");
  TestCluster& cluster = world.cluster;
  DqdProcess& dqd = *world.dqd;

  auto primaries = cluster.primaries();
  REQUIRE(primaries.size() == 3);
  auto id_of = [](TestRedis* node) {
    dq::ReplyPtr id = node->command({"CLUSTER", "MYID"});
    return std::string(id->str, id->len);
  };

  // Where the 16 tags live before: the moved slots must carry some of them.
  auto tag_owners = [&] {
    dq::ReplyPtr slots = cluster.nodes()[0]->command({"CLUSTER", "SLOTS"});
    std::vector<int> owners;
    for (int i = 0; i < dq::kClusterVirtualShards; ++i) {
      auto owner = dq::slot_owner(slots.get(), dq::key_slot("{dq:" + std::to_string(i) + "}"));
      owners.push_back(owner ? owner->port : 0);
    }
    return owners;
  };
  std::vector<int> before = tag_owners();
  // From the owner of slot 0: its first 300 slots hold {dq:2} (84) and
  // {dq:6} (208); redis-cli moves a node's lowest slots first.
  TestRedis* source = nullptr;
  {
    dq::ReplyPtr slots = cluster.nodes()[0]->command({"CLUSTER", "SLOTS"});
    auto owner = dq::slot_owner(slots.get(), 0);
    REQUIRE(owner);
    for (TestRedis* node : primaries) {
      source = node->port() == owner->port ? node : source;
    }
  }
  REQUIRE(source != nullptr);
  TestRedis* target = primaries[0] == source ? primaries[1] : primaries[0];

  std::atomic<bool> adding{true};
  std::mutex mutex;
  std::vector<std::string> accepted;
  std::map<long, int> answers;
  std::thread producer([&] {
    HttpClient http;
    for (int batch = 0; adding; ++batch) {
      Json jobs = Json::array();
      for (int i = 0; i < 50; ++i) {
        jobs.push_back(Json{{"id", "r" + std::to_string(batch) + "-" + std::to_string(i)},
                            {"body", Json{{"i", i}}},
                            {"delay", 1}});
      }
      auto answer =
          http.request("POST", dqd.jobs_url("r") + "/batch", Json{{"jobs", jobs}}.dump(), 30000);
      std::lock_guard<std::mutex> lock(mutex);
      if (answer.status != 200) {
        ++answers[answer.status];
        continue;
      }
      Json parsed = answer.json();
      for (const auto& result : parsed["results"]) {
        long status = result["status"].get<long>();
        ++answers[status];
        if (status == 201) {
          accepted.push_back(result["id"].get<std::string>());
        }
      }
    }
  });
  // Adds and deliveries are under way when the reshard starts.
  sleep_ms(1500);
  wait_within(kGenerousMs, [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return !accepted.empty();
  });
  std::string output;
  int64_t started = wall_ms();
  int status = run_command(
      {"/usr/bin/redis-cli", "--cluster", "reshard", source->address(), "--cluster-from",
       id_of(source), "--cluster-to", id_of(target), "--cluster-slots", "300", "--cluster-yes"},
      &output);
  MESSAGE("reshard took ", wall_ms() - started, " ms");
  CHECK_MESSAGE(status == 0, output.substr(output.size() > 2000 ? output.size() - 2000 : 0));
  std::vector<int> after = tag_owners();
  int moved = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    moved += before[i] != after[i];
  }
  MESSAGE(moved, " of the 16 virtual shards moved to another primary");
  CHECK(moved > 0);
  sleep_ms(1500);
  adding = false;
  producer.join();
  for (const auto& [code, count] : answers) {
    MESSAGE("answer ", code, ": ", count);
  }
  Tally tally = tally_deliveries(world.callback, accepted);
  CHECK(!accepted.empty());
  CHECK(tally.lost == 0);
  CHECK(tally.twice == 0);
}

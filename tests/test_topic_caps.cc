// Caps per topic (max_in_flight, max_rate), end to end: real redis-servers,
// real dqd processes on the same shards, a callback server that counts the
// calls open at once. docs/delivery.md, "Caps per topic".
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/core/shard.h"
#include "common/redis/redis_sync.h"
#include "common/store/coordination_shard.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "common/store/lua_scripts.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"

using dq::Json;
using dq::Topic;
using dq::test::CallbackAnswer;
using dq::test::CallbackServer;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::RecordedRequest;
using dq::test::sleep_ms;
using dq::test::TestRedis;
using dq::test::wait_until;

namespace {

void add_capped_topic(DqdProcess& dqd, const std::string& name, const std::string& url,
                      int max_in_flight, int max_rate, int timeout_ms = 5000) {
  Topic topic;
  topic.name = name;
  topic.callback_url = url;
  topic.timeout_ms = timeout_ms;
  topic.max_in_flight = max_in_flight;
  topic.max_rate = max_rate;
  dq::Status added = dqd.registry().add_topic(topic);
  REQUIRE_MESSAGE(added.is_ok(), added.message());
}

// Adds `count` jobs "<prefix>N" through the batch route, due in delay_s.
void add_jobs(HttpClient& http, const DqdProcess& dqd, const std::string& topic,
              const std::string& prefix, int count, double delay_s) {
  for (int start = 0; start < count; start += 500) {
    Json jobs = Json::array();
    for (int i = start; i < std::min(count, start + 500); ++i) {
      jobs.push_back(
          Json{{"id", prefix + std::to_string(i)}, {"body", Json{{"i", i}}}, {"delay", delay_s}});
    }
    auto answer = http.post(dqd.jobs_url(topic) + "/batch", Json{{"jobs", jobs}}.dump());
    REQUIRE(answer.status == 200);
    Json parsed = answer.json();
    for (const auto& result : parsed["results"]) {
      REQUIRE(result["status"] == 201);
    }
  }
}

// Answered calls per job id of one callback path ("" for every path).
std::map<std::string, int> answered_by_id(const CallbackServer& callback,
                                          const std::string& path = "") {
  std::map<std::string, int> count;
  for (const auto& request : callback.requests()) {
    if (request.answered && (path.empty() || request.path == path)) {
      ++count[request.header("x-dq-id")];
    }
  }
  return count;
}

// The last arrival of a path's calls (0 when none).
int64_t last_arrival(const CallbackServer& callback, const std::string& path) {
  int64_t last = 0;
  for (const auto& request : callback.requests()) {
    if (request.path == path) {
      last = std::max(last, request.arrived_ms);
    }
  }
  return last;
}

// A sample of a host's /metrics page (-1 when absent).
double metric(HttpClient& http, const DqdProcess& dqd, const std::string& series) {
  std::string page = http.get(dqd.base_url() + "/metrics").body;
  size_t at = page.find("\n" + series + " ");
  if (at == std::string::npos) {
    return -1;
  }
  return std::stod(page.substr(at + series.size() + 2));
}

// One call of permit_lease.lua for topic "t" (its ARGV, in order); returns
// {held, shares taken, wait ms, far}.
struct LeaseAsk {
  std::string holder;
  int64_t seq = 0;
  int open = 0;
  int want = 0;
  int ahead = 0;
  int max_in_flight = 0;
  int64_t lease_ms = 60000;
  int rate = 0;
  int burst = 0;
  int have = 0;
  int refund = 0;
  int share_ahead = 0;
};

std::vector<int64_t> lease(dq::RedisConnection& shard, const LeaseAsk& ask) {
  dq::ScriptCall call;
  call.script = &dq::kPermitLeaseScript;
  call.keys = {dq::keys::permit_leases("t"), dq::keys::permit_deadlines("t"), dq::keys::rate("t")};
  for (int64_t value :
       {ask.seq, int64_t{ask.open}, int64_t{ask.want}, int64_t{ask.ahead},
        int64_t{ask.max_in_flight}, ask.lease_ms, int64_t{ask.rate}, int64_t{ask.burst},
        int64_t{ask.have}, int64_t{ask.refund}, int64_t{ask.share_ahead}}) {
    call.args.push_back(std::to_string(value));
  }
  call.args.insert(call.args.begin(), ask.holder);
  auto reply = shard.run(call);
  REQUIRE_MESSAGE(reply.is_ok(), reply.status().message());
  REQUIRE((*reply)->type == REDIS_REPLY_ARRAY);
  REQUIRE((*reply)->elements == 4);
  std::vector<int64_t> out;
  for (size_t i = 0; i < 4; ++i) {
    out.push_back((*reply)->element[i]->integer);
  }
  return out;
}

// The sum of the counts the topic's leases hold.
int64_t leased_total(dq::RedisConnection& shard) {
  auto all = shard.command({"HVALS", dq::keys::permit_leases("t")});
  REQUIRE(all.is_ok());
  int64_t total = 0;
  for (size_t i = 0; i < (*all)->elements; ++i) {
    total += std::stoll((*all)->element[i]->str);  // "count seq"
  }
  return total;
}

}  // namespace

TEST_CASE("permit_lease.lua: a block while far from the caps, exact near them, never past them") {
  TestRedis redis;
  dq::RedisConnection shard(redis.shard(), 1000, 2000);
  // max_in_flight 100. A asks for 5 now, 40 ahead: far, it gets the block.
  auto a = lease(shard, {"a", 1, 0, 5, 40, 100});
  CHECK(a == std::vector<int64_t>{40, 0, 0, 1});
  // B: 60 are left, a block of 40 would leave fewer than 40: exactly 5.
  auto b = lease(shard, {"b", 1, 0, 5, 40, 100});
  CHECK(b == std::vector<int64_t>{5, 0, 0, 0});
  // C wants 80 with 3 calls open: what is left (55) besides its calls, and a wait.
  auto c = lease(shard, {"c", 1, 3, 80, 80, 100});
  CHECK(c[0] == 3 + 52);
  CHECK(c[2] > 0);
  CHECK(leased_total(shard) == 100);
  // A gives back all but 2 calls open; B may then take its 40.
  CHECK(lease(shard, {"a", 2, 2, 0, 0, 100})[0] == 2);
  CHECK(lease(shard, {"b", 2, 0, 40, 40, 100})[0] == 40);
  CHECK(leased_total(shard) == 2 + 40 + 55);
  // A call of A's that ran late (after its call 2) changes nothing.
  CHECK(lease(shard, {"a", 1, 0, 30, 30, 100})[0] == 2);
  CHECK(leased_total(shard) == 2 + 40 + 55);
  // A lease not renewed ends by itself: C's 55 come free.
  CHECK(lease(shard, {"c", 2, 3, 52, 52, 100, 300})[0] == 55);
  REQUIRE(wait_until(10000, [&] { return lease(shard, {"d", 1, 0, 50, 50, 100})[0] == 50; }));
  CHECK(leased_total(shard) == 2 + 40 + 50);

  // max_rate 1 a second, burst 100: a block of 40 shares leaves 60 (far); the
  // next holder's block would leave fewer than 40: exactly what it wants.
  auto r1 = lease(shard, {"r1", 1, 0, 5, 0, 0, 60000, 1, 100, 0, 0, 40});
  CHECK(r1 == std::vector<int64_t>{0, 40, 0, 1});
  auto r2 = lease(shard, {"r2", 1, 0, 5, 0, 0, 60000, 1, 100, 0, 0, 40});
  CHECK(r2 == std::vector<int64_t>{0, 5, 0, 0});
  // 45 given, 55 left: 60 wanted get 55 and a wait of about a second.
  auto r3 = lease(shard, {"r3", 1, 0, 60, 0, 0, 60000, 1, 100, 0, 0, 0});
  CHECK(r3[1] >= 55);
  CHECK(r3[1] <= 58);  // a share a second may have come meanwhile
  CHECK(r3[2] > 0);
  CHECK(r3[2] <= 1000);
  // r1 refunds its 40 unused shares: they can be taken again at once.
  auto r4 = lease(shard, {"r1", 2, 0, 0, 0, 0, 60000, 1, 100, 0, 40, 0});
  CHECK(r4[1] == 0);
  auto r5 = lease(shard, {"r2", 2, 0, 40, 0, 0, 60000, 1, 100, 0, 0, 0});
  CHECK(r5[1] == 40);
}

TEST_CASE("max_in_flight 2 over two hosts with two consumers each: never a third call open") {
  TestRedis shard_a;
  TestRedis shard_b;
  CallbackServer callback;
  callback.set_responder([](const RecordedRequest&, size_t) { return CallbackAnswer(200, 250); });
  DqdOptions options;
  options.shards = {shard_a.address(), shard_b.address()};
  options.timers = 1;
  options.consumers = 2;
  DqdProcess host_a(options);
  DqdProcess host_b(options);
  // Each host has its own registry, with the topic registered in both.
  add_capped_topic(host_a, "capped", callback.url(), 2, 0);
  add_capped_topic(host_b, "capped", callback.url(), 2, 0);
  host_a.start();
  host_b.start();
  HttpClient http;
  const int jobs = 40;
  add_jobs(http, host_a, "capped", "j", jobs / 2, 1);
  add_jobs(http, host_b, "capped", "k", jobs / 2, 1);
  REQUIRE(wait_until(60000, [&] { return answered_by_id(callback).size() == jobs; }));
  sleep_ms(500);  // a late duplicate would show now
  auto answered = answered_by_id(callback);
  CHECK(answered.size() == jobs);
  for (const auto& [id, times] : answered) {
    CAPTURE(id);
    CHECK(times == 1);
  }
  CHECK(callback.count() == jobs);
  MESSAGE("most calls open at once: ", callback.most_open());
  CHECK(callback.most_open() == 2);  // reached, never passed
  // Every permit a host's consumers took went back once the topic was idle.
  const std::string taken = "dq_topic_permits_taken_total{topic=\"capped\"}";
  const std::string returned = "dq_topic_permits_returned_total{topic=\"capped\"}";
  double taken_a = -1;
  double taken_b = -1;
  CHECK(wait_until(10000, [&] {
    taken_a = metric(http, host_a, taken);
    taken_b = metric(http, host_b, taken);
    return taken_a == metric(http, host_a, returned) && taken_b == metric(http, host_b, returned);
  }));
  MESSAGE("permits taken: host a ", taken_a, ", host b ", taken_b);
  CHECK(taken_a + taken_b >= 1);
  CHECK(metric(http, host_a, "dq_topic_permit_waits_total{topic=\"capped\"}") +
            metric(http, host_b, "dq_topic_permit_waits_total{topic=\"capped\"}") >=
        1);  // the cap was reached
}

TEST_CASE("max_rate 50: 500 due jobs take 10 s; a topic beside it drains as fast as alone") {
  TestRedis redis;
  CallbackServer callback;
  // The free topic's receiver takes 100 ms a call, so its drain time is set
  // by the slots it may hold, not by the machine's speed.
  callback.set_responder([](const RecordedRequest& request, size_t) {
    return CallbackAnswer(200, request.path == "/free" ? 100 : 0);
  });
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 2;
  options.consumer_concurrency = 16;
  DqdProcess dqd(options);
  add_capped_topic(dqd, "rated", callback.url("/rated"), 0, 50);
  add_capped_topic(dqd, "free", callback.url("/free"), 0, 0);
  dqd.start();
  HttpClient http;
  const int free_jobs = 1200;

  // The free topic alone.
  add_jobs(http, dqd, "free", "alone", free_jobs, 1);
  int64_t due = dq::now_ms() + 1000;
  REQUIRE(wait_until(60000, [&] { return answered_by_id(callback, "/free").size() == free_jobs; }));
  int64_t alone_ms = last_arrival(callback, "/free") - due;

  // Both at once.
  int64_t before = last_arrival(callback, "/free");
  add_jobs(http, dqd, "rated", "r", 500, 1);
  add_jobs(http, dqd, "free", "beside", free_jobs, 1);
  due = dq::now_ms() + 1000;
  REQUIRE(wait_until(60000, [&] { return answered_by_id(callback, "/rated").size() == 500; }));
  REQUIRE(
      wait_until(60000, [&] { return answered_by_id(callback, "/free").size() == 2 * free_jobs; }));
  // From the first call to the last: (500 - burst 5) / 50 per s = 9.9 s.
  std::vector<int64_t> rated;
  for (const auto& request : callback.requests()) {
    if (request.path == "/rated") {
      rated.push_back(request.arrived_ms);
    }
  }
  std::sort(rated.begin(), rated.end());
  int64_t rated_ms = rated.back() - rated.front();
  // No second holds more than its 50 calls and the burst of 5.
  size_t most_in_a_second = 0;
  for (size_t i = 0, j = 0; i < rated.size(); ++i) {
    while (rated[i] - rated[j] >= 1000) {
      ++j;
    }
    most_in_a_second = std::max(most_in_a_second, i - j + 1);
  }
  int64_t beside_ms = last_arrival(callback, "/free") - due;
  CHECK(before < due);
  MESSAGE("500 jobs at max_rate 50: ", rated_ms, " ms from the first call to the last, at most ",
          most_in_a_second, " in one second; free topic alone ", alone_ms, " ms, beside it ",
          beside_ms, " ms");
  // The cap, in a form a loaded machine cannot break: a delay only makes a
  // call arrive later, so the n-th call never arrives before the bucket
  // (burst 5, then one per 20 ms) let it go, counted from the first call
  // (300 ms of slack for that first call's own delay). Counting any one
  // second instead failed under ASan: calls granted on time arrived bunched
  // (64 in a second).
  for (size_t i = 0; i < rated.size(); ++i) {
    int64_t earliest = (static_cast<int64_t>(i) + 1 - 5) * 20 - 300;
    CAPTURE(i);
    CHECK(rated[i] - rated.front() >= earliest);
  }
  CHECK(rated_ms >= 9000);
  CHECK(rated_ms <= 11000);
  // The free topic is not held behind the capped one: it ends while the
  // capped topic still drains. How close it comes to its time alone (within
  // 10 % in plain builds) is a speed figure: reported above, measured by
  // bench/run --only caps, not asserted here (ASan's run: 5326 alone, 6159 ms
  // beside).
  CHECK(beside_ms < rated_ms);
  sleep_ms(300);
  for (const auto& [id, times] : answered_by_id(callback)) {
    CAPTURE(id);
    CHECK(times == 1);
  }
}

TEST_CASE("kill -9 of a consumer holding both permits: they come back after their lease") {
  TestRedis redis;
  CallbackServer callback;
  // The first two calls hang; the consumer making them is killed.
  callback.set_responder(
      [](const RecordedRequest&, size_t n) { return CallbackAnswer(200, n < 2 ? 60000 : 100); });
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 1;
  options.extra_ini = "[delivery]\nlease_margin_ms = 1000\n";
  DqdProcess dqd(options);
  const int timeout_ms = 5000;  // the hung calls stay open until the kill
  const int lease_ms = timeout_ms + 1000;
  add_capped_topic(dqd, "capped", callback.url(), 2, 0, timeout_ms);
  dqd.start();
  HttpClient http;
  const int jobs = 10;
  add_jobs(http, dqd, "capped", "j", jobs, 0.5);
  REQUIRE(wait_until(20000, [&] { return callback.open_now() == 2; }));
  int64_t first_calls = 0;
  for (const auto& request : callback.requests()) {
    first_calls = std::max(first_calls, request.arrived_ms);
  }
  sleep_ms(300);
  CHECK(callback.count() == 2);  // the cap holds the rest back
  auto consumers = dq::test::children_titled(dqd.pid(), "dq-consume_");
  REQUIRE(consumers.size() == 1);
  REQUIRE(kill(consumers[0], SIGKILL) == 0);
  // The two hung calls are never answered (their replies are due long after
  // the test): the callback server counts them open throughout.
  REQUIRE(wait_until(60000, [&] { return answered_by_id(callback).size() == jobs; }));
  sleep_ms(500);
  auto requests = callback.requests();
  int64_t next_call = 0;
  for (size_t i = 2; i < requests.size(); ++i) {
    next_call =
        next_call == 0 ? requests[i].arrived_ms : std::min(next_call, requests[i].arrived_ms);
  }
  MESSAGE("first call after the kill: ", next_call - first_calls,
          " ms after the permits were taken (lease ", lease_ms, " ms)");
  // The respawned consumer had to wait for the dead one's permits to end.
  CHECK(next_call - first_calls >= lease_ms - 1000);
  auto answered = answered_by_id(callback);
  CHECK(answered.size() == jobs);  // nothing lost
  for (const auto& [id, times] : answered) {
    CAPTURE(id);
    CHECK(times == 1);  // nothing answered twice
  }
  // The two dead calls and at most two new ones: the new consumer never had
  // a third call open beside its own two.
  CHECK(callback.open_now() == 2);
  CHECK(callback.most_open() == 4);
}

TEST_CASE("the topic's coordination shard down: its calls pause, use no attempt, resume after") {
  TestRedis shard_a;
  TestRedis shard_b;
  CallbackServer callback;
  DqdOptions options;
  options.shards = {shard_a.address(), shard_b.address()};
  options.timers = 1;
  options.consumers = 1;
  DqdProcess dqd(options);
  add_capped_topic(dqd, "capped", callback.url("/capped"), 5, 0);
  add_capped_topic(dqd, "free", callback.url("/free"), 0, 0);
  dqd.start();
  std::vector<dq::ShardAddress> shards = {shard_a.shard(), shard_b.shard()};
  size_t coordination = dq::coordination_shard(shards, "capped");
  TestRedis& down = coordination == 0 ? shard_a : shard_b;
  TestRedis& up = coordination == 0 ? shard_b : shard_a;
  HttpClient http;
  const int jobs = 40;
  add_jobs(http, dqd, "capped", "c", jobs, 2);
  add_jobs(http, dqd, "free", "f", jobs, 2);
  // The capped jobs whose home is the shard that stays up.
  std::vector<std::string> on_up;
  for (int i = 0; i < jobs; ++i) {
    std::string id = "c" + std::to_string(i);
    if (dq::shard_order(shards, dq::job_key("capped", id)).front() != coordination) {
      on_up.push_back(id);
    }
  }
  REQUIRE(!on_up.empty());
  down.stop();
  // Well past their due time: the free topic's jobs on the shard that is up
  // are delivered, the capped topic's wait.
  REQUIRE(wait_until(20000, [&] { return answered_by_id(callback, "/free").size() >= 5; }));
  sleep_ms(3000);
  CHECK(answered_by_id(callback, "/capped").empty());
  for (const std::string& id : on_up) {
    CAPTURE(id);
    auto record = up.command({"HGET", dq::keys::flat_records(), dq::job_key("capped", id)});
    REQUIRE(record->type == REDIS_REPLY_STRING);
    std::string meta(record->str, record->len);
    CHECK(meta.rfind("r|0|", 0) == 0);  // ready, no attempt used
  }
  down.start();
  REQUIRE(wait_until(60000, [&] { return answered_by_id(callback, "/capped").size() == jobs; }));
  REQUIRE(wait_until(60000, [&] { return answered_by_id(callback, "/free").size() == jobs; }));
  sleep_ms(500);
  for (const auto& [id, times] : answered_by_id(callback)) {
    CAPTURE(id);
    CHECK(times == 1);
  }
}

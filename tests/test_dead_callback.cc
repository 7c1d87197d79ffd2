// The dead-letter callback (docs/callbacks.md, "Dead-letter callback"): a real
// dqd (timer, consumer, dq-redis-checker), a real Redis and real callback
// servers. A job that uses its attempts and one answered with a dead_on status
// each give exactly one signed POST with the right fields; a receiver that
// fails twice gets the call again until it takes it; a checker killed with
// kill -9 while entries wait loses none of them; a bad URL is refused by dqctl.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/http/webhook_signature.h"
#include "common/redis/redis_sync.h"
#include "common/registry/signing_keys.h"
#include "common/store/dead_callbacks.h"
#include "common/store/job_store.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;

namespace {

// A fixed HMAC secret: the test checks signatures with it.
const std::string kSecret = "whsec_" + base64_encode(std::string(32, 'k'));

struct DeadWorld {
  DeadWorld() : dqd(options()) { dqd.start(); }

  DqdOptions options() {
    DqdOptions options;
    options.shards = {redis.address()};
    options.timers = 1;
    options.consumers = 1;
    options.backoff_unit_ms = 100;
    return options;
  }
  RunResult ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"-c", dqd.config_path()});
    return run_dqctl(args, dqd.dir());
  }
  // A topic whose jobs die after `max_attempts`, or at once on a 410.
  void add_topic(const std::string& name, int max_attempts) {
    RunResult added =
        ctl({"topic", "add", name, "--callback", callback.url(), "--max-attempts",
             std::to_string(max_attempts), "--dead-on", "410", "--circuit-breaker", "off",
             "--signing-secret", kSecret, "--dead-callback", dead.url("/dead")});
    REQUIRE_MESSAGE(added.exit_code == 0, added.out, added.err);
  }
  void add_job(const std::string& topic, const std::string& id, const Json& body) {
    HttpResult added;
    // A topic made a moment ago is known to the API server after its next registry read.
    REQUIRE(wait_until(10000, [&] {
      added = http.post(dqd.jobs_url(topic), job_doc(id, body, 0));
      return added.status != 404;
    }));
    REQUIRE_MESSAGE(added.status == 201, added.body);
  }
  // The dead-letter callbacks received for job `id`.
  std::vector<RecordedRequest> dead_calls(const std::string& id) {
    std::vector<RecordedRequest> calls;
    for (auto& request : dead.requests()) {
      if (request.header("x-dq-id") == id) calls.push_back(request);
    }
    return calls;
  }
  int64_t pending() {
    auto shards = parse_shard_list(redis.address());
    REQUIRE(shards.is_ok());
    RedisConnection connection((*shards)[0], 1000, 2000);
    auto count = pending_dead_callbacks(connection);
    REQUIRE_MESSAGE(count.is_ok(), count.status().message());
    return *count;
  }

  TestRedis redis;
  CallbackServer callback;  // the topic's own callback: fails as each test wants
  CallbackServer dead;      // the dead-letter callback's receiver
  DqdProcess dqd;
  HttpClient http;
};

// The signature of a recorded call as the topic's key makes it.
std::string expected_signature(const RecordedRequest& call) {
  auto key = make_hmac_key(kSecret, 0);
  REQUIRE(key.is_ok());
  int64_t timestamp = std::stoll(call.header("webhook-timestamp"));
  return webhook_signature({*key}, timestamp * 1000, call.header("webhook-id"), timestamp,
                           call.body);
}

// The shard's clock, ms (what died_at_ms is measured by).
int64_t redis_ms(RedisConnection& shard) {
  auto time = shard.command({"TIME"});
  REQUIRE(time.is_ok());
  const redisReply* r = time->get();
  REQUIRE(r->elements == 2);
  return std::stoll(r->element[0]->str) * 1000 + std::stoll(r->element[1]->str) / 1000;
}

}  // namespace

TEST_CASE("a lease that expires on the last attempt writes the entry; one claimer at a time") {
  TestRedis redis;
  auto shards = parse_shard_list(redis.address());
  REQUIRE(shards.is_ok());
  BlockingJobStore store(*shards, 1000, 2000);
  RedisConnection& shard = store.shard(0);
  int64_t start = redis_ms(shard);
  REQUIRE(store.add("called", "late", "{\"x\":1}", DueTime{false, start - 10}).is_ok());
  REQUIRE(store.add("quiet", "q", "{}", DueTime{false, start - 10}).is_ok());
  REQUIRE(store.promote(0, 100)->moved == 2);
  // One attempt each, leased for 50 ms, and never answered: the consumer "died".
  auto batch = store.reserve(
      0, "r1", {ReserveSlot{"called", 50, 1, 1, 1}, ReserveSlot{"quiet", 50, 1, 1, 1}}, 10,
      1 << 20);
  REQUIRE(batch.is_ok());
  REQUIRE(batch->jobs.size() == 2);
  sleep_ms(200);
  // Only "called" has a dead-letter callback.
  auto expired = store.requeue_expired(0, 100, {{"called", true, 0}});
  REQUIRE(expired.is_ok());
  CHECK(expired->dead.size() == 2);
  CHECK(*pending_dead_callbacks(shard) == 1);

  auto first = claim_dead_callbacks(shard, 10, 60000, "host-a");
  REQUIRE(first.is_ok());
  REQUIRE(first->entries.size() == 1);
  DeadCallbackEntry entry = first->entries[0];
  CHECK(entry.topic == "called");
  CHECK(entry.id == "late");
  CHECK(entry.body == "{\"x\":1}");
  CHECK(entry.attempts == 1);
  CHECK(entry.last_error.find("lease expired") != std::string::npos);
  CHECK(entry.died_at_ms >= start);
  CHECK(entry.died_at_ms <= first->redis_now_ms);
  CHECK(entry.tries == 0);
  // Leased to host-a: another checker gets nothing, and cannot reschedule it.
  CHECK(claim_dead_callbacks(shard, 10, 60000, "host-b")->entries.empty());
  CHECK(*retry_dead_callback(shard, entry.number, "host-b", 0, "not mine") == false);
  // host-a's send failed: due again at once (wait 0), one try counted.
  CHECK(*retry_dead_callback(shard, entry.number, "host-a", 0, "HTTP 500") == true);
  auto again = claim_dead_callbacks(shard, 10, 60000, "host-b");
  REQUIRE(again->entries.size() == 1);
  CHECK(again->entries[0].tries == 1);
  CHECK(again->entries[0].number == entry.number);
  // Taken: gone for good.
  REQUIRE(finish_dead_callback(shard, entry.number).is_ok());
  CHECK(*pending_dead_callbacks(shard) == 0);
  CHECK(claim_dead_callbacks(shard, 10, 0, "host-a")->entries.empty());
}

TEST_CASE("a job that uses its attempts and one hit by dead_on each give one signed callback") {
  DeadWorld world;
  world.callback.set_responder([](const RecordedRequest& request, size_t) {
    return CallbackAnswer(request.header("x-dq-id") == "gone" ? 410 : 500);
  });
  world.add_topic("doomed", 2);
  int64_t before = wall_ms();
  world.add_job("doomed", "spent", Json{{"order", 7}});
  world.add_job("doomed", "gone", Json{{"order", 8}});

  REQUIRE(wait_until(30000, [&] {
    return !world.dead_calls("spent").empty() && !world.dead_calls("gone").empty();
  }));
  // Removed once taken; nothing more is sent.
  REQUIRE(wait_until(10000, [&] { return world.pending() == 0; }));
  sleep_ms(1500);
  auto spent = world.dead_calls("spent");
  auto gone = world.dead_calls("gone");
  REQUIRE(spent.size() == 1);
  REQUIRE(gone.size() == 1);
  CHECK(world.dead.count() == 2);
  // The topic's own callback was called twice for one, once for the other.
  CHECK(deliveries_by_id(world.callback)["spent"] == 2);
  CHECK(deliveries_by_id(world.callback)["gone"] == 1);

  for (const RecordedRequest& call : {spent[0], gone[0]}) {
    CHECK(call.method == "POST");
    CHECK(call.path == "/dead");
    CHECK(call.header("content-type") == "application/json");
    CHECK(call.header("x-dq-topic") == "doomed");
    CHECK(call.header("x-dq-event") == "dead");
    CHECK(call.header("webhook-id").rfind("msg_", 0) == 0);
    CHECK(call.header("webhook-signature") == expected_signature(call));
    Json doc = Json::parse(call.body);
    CHECK(doc["event"] == "dead");
    CHECK(doc["topic"] == "doomed");
    CHECK(doc["id"] == call.header("x-dq-id"));
    CHECK(doc["died_at_ms"].get<int64_t>() >= before - 1000);
    CHECK(doc["died_at_ms"].get<int64_t>() <= wall_ms() + 1000);
    CHECK(doc["created_at_ms"].get<int64_t>() <= doc["died_at_ms"].get<int64_t>());
  }
  CHECK(spent[0].header("webhook-id") != gone[0].header("webhook-id"));
  Json spent_doc = Json::parse(spent[0].body);
  CHECK(spent_doc["body"] == Json{{"order", 7}});
  CHECK(spent_doc["attempts"] == 2);
  CHECK(spent_doc["last_error"].get<std::string>().find("HTTP 500") != std::string::npos);
  Json gone_doc = Json::parse(gone[0].body);
  CHECK(gone_doc["body"] == Json{{"order", 8}});
  CHECK(gone_doc["attempts"] == 1);
  CHECK(gone_doc["last_error"].get<std::string>().find("dead_on 410") != std::string::npos);

  // The signature of another body does not match: the check can fail.
  RecordedRequest forged = spent[0];
  forged.body = gone[0].body;
  CHECK(forged.header("webhook-signature") != expected_signature(forged));

  // The setting shows under one name in dqctl and the HTTP API.
  RunResult shown = world.ctl({"--json", "topic", "show", "doomed"});
  REQUIRE(shown.exit_code == 0);
  CHECK(Json::parse(shown.out)["dead_callback"] == world.dead.url("/dead"));
  HttpResult got = world.http.get(world.dqd.base_url() + "/v1/topics/doomed");
  REQUIRE_MESSAGE(got.status == 200, got.body);
  CHECK(Json::parse(got.body)["dead_callback"] == world.dead.url("/dead"));

  // Counted in /metrics: two sent, none failed.
  std::string page = world.http.get(world.dqd.base_url() + "/metrics").body;
  CHECK(contains(page, "\ndq_dead_callbacks_total{topic=\"doomed\",outcome=\"sent\"} 2\n"));
  CHECK_FALSE(contains(page, "outcome=\"failed\""));
}

TEST_CASE("a receiver that answers 500 twice gets the same call again until it takes it") {
  DeadWorld world;
  world.callback.answer_with({}, 500);
  world.dead.answer_with({500, 500}, 200);
  world.add_topic("flaky", 1);
  world.add_job("flaky", "j1", Json{{"n", 1}});

  REQUIRE(wait_until(60000, [&] { return world.dead.count() >= 3; }));
  REQUIRE(wait_until(10000, [&] { return world.pending() == 0; }));
  sleep_ms(3000);  // a fourth send would come within the 4 s wait that follows a third failure
  auto calls = world.dead_calls("j1");
  REQUIRE(calls.size() == 3);
  for (const auto& call : calls) {
    CHECK(call.header("webhook-id") == calls[0].header("webhook-id"));
    CHECK(call.header("webhook-signature") == expected_signature(call));
    CHECK(Json::parse(call.body)["id"] == "j1");
  }
  // Retried after a wait (1 s, then 2 s), never at once.
  CHECK(calls[1].arrived_ms - calls[0].arrived_ms >= 900);
  CHECK(calls[2].arrived_ms - calls[1].arrived_ms >= 1900);
  std::string page = world.http.get(world.dqd.base_url() + "/metrics").body;
  CHECK(contains(page, "\ndq_dead_callbacks_total{topic=\"flaky\",outcome=\"failed\"} 2\n"));
  CHECK(contains(page, "\ndq_dead_callbacks_total{topic=\"flaky\",outcome=\"sent\"} 1\n"));
}

TEST_CASE("kill -9 of the checker while entries wait: each is still delivered, once") {
  DeadWorld world;
  world.callback.answer_with({}, 500);
  std::atomic<bool> accept{false};
  std::mutex mutex;
  std::map<std::string, int> taken;  // 2xx answers per job id
  world.dead.set_responder([&](const RecordedRequest& request, size_t) {
    if (!accept) return CallbackAnswer(503);
    std::lock_guard<std::mutex> lock(mutex);
    ++taken[request.header("x-dq-id")];
    return CallbackAnswer(200);
  });
  world.add_topic("kept", 1);
  const std::vector<std::string> ids = {"k1", "k2", "k3"};
  for (const auto& id : ids) world.add_job("kept", id, Json{{"id", id}});

  // Every entry has been tried (and refused) at least once.
  REQUIRE(wait_until(30000, [&] {
    for (const auto& id : ids) {
      if (world.dead_calls(id).empty()) return false;
    }
    return true;
  }));
  auto checkers = children_titled(world.dqd.pid(), "dq-redis-checker");
  REQUIRE(checkers.size() == 1);
  REQUIRE(kill(checkers[0], SIGKILL) == 0);
  CHECK(world.pending() == 3);  // the entries outlive the process
  REQUIRE(wait_until(30000, [&] {
    auto now = children_titled(world.dqd.pid(), "dq-redis-checker");
    return now.size() == 1 && now[0] != checkers[0];
  }));
  accept = true;
  REQUIRE(wait_until(90000, [&] { return world.pending() == 0; }));
  sleep_ms(1000);
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& id : ids) {
    CHECK_MESSAGE(taken[id] == 1, id);
  }
  CHECK(taken.size() == ids.size());
}

TEST_CASE("dqctl refuses a bad dead_callback and changes nothing; off clears it") {
  DeadWorld world;
  world.add_topic("t", 3);
  for (const std::string bad : {"not-a-url", "ftp://x/y", "http://169.254.169.254/latest"}) {
    RunResult set = world.ctl({"topic", "set", "t", "--dead-callback", bad});
    CHECK(set.exit_code != 0);
    CHECK_MESSAGE(contains(set.err + set.out, "dead_callback"), set.err, set.out);
    CHECK(world.dqd.registry().get_topic("t")->dead_callback == world.dead.url("/dead"));
  }
  // Redis itself is no receiver either.
  RunResult redis =
      world.ctl({"topic", "set", "t", "--dead-callback", "http://" + world.redis.address() + "/x"});
  CHECK(redis.exit_code != 0);
  CHECK(contains(redis.err + redis.out, "dead_callback"));
  CHECK(world.dqd.registry().get_topic("t")->dead_callback == world.dead.url("/dead"));

  RunResult off = world.ctl({"topic", "set", "t", "--dead-callback", "off"});
  REQUIRE_MESSAGE(off.exit_code == 0, off.err);
  CHECK(world.dqd.registry().get_topic("t")->dead_callback.empty());
  RunResult shown = world.ctl({"--json", "topic", "show", "t"});
  CHECK(Json::parse(shown.out)["dead_callback"] == "");
}

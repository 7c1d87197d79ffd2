// AsyncJobStore driven directly on an event loop, as the API server drives
// it: the adds of one loop turn leave as one add.lua call, a get waits for a
// slow home up to the command timeout, a delete whose reply does not come is
// 504 "outcome unknown", and a BLPOP wait longer than the command timeout is
// not failed early (its own timeout).
#include <doctest/doctest.h>

#include <string>

#include "common/core/clock.h"
#include "common/core/loop_waiter.h"
#include "common/store/async_job_store.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/store_checks.h"

using namespace dq;
using namespace dq::test;

namespace {

Config config_over(TestRedis& redis, int command_timeout_ms, int port = 0) {
  require_own_server(redis);
  Config config;
  config.shards = {redis.shard()};
  if (port != 0) {
    config.shards.front().port = port;  // through a proxy
  }
  config.redis_connect_timeout_ms = 1000;
  config.redis_command_timeout_ms = command_timeout_ms;
  return config;
}

// Connects every shard of `store` on the waiter's loop.
void connect(LoopWaiter& waiter, AsyncJobStore& store) {
  store.start();
  int64_t deadline = monotonic_ms() + 10000;
  while (!store.first_connects_ended() && monotonic_ms() < deadline) {
    event_base_loop(waiter.base(), EVLOOP_ONCE);
  }
  REQUIRE(store.health().front().up);
}

// Calls of one command so far (INFO commandstats), 0 when none.
int64_t calls_of(TestRedis& redis, const std::string& command) {
  std::string info = text(redis.command({"INFO", "commandstats"}).get());
  std::string field = "cmdstat_" + command + ":calls=";
  size_t at = info.find(field);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + field.size()));
}

}  // namespace

TEST_CASE("the adds of one loop turn to a shard leave as one add.lua call") {
  TestRedis redis;
  LoopWaiter waiter;
  AsyncJobStore store(waiter.base(), config_over(redis, 2000));
  connect(waiter, store);
  // The first call loads the function library (FCALL, not found, FUNCTION LOAD, FCALL).
  auto first = waiter.wait<Result<Added>>([&](auto done) {
    store.add(AddRequest{"t", "first", "{}", {true, 60000}, {}, {}, {}},
              [done](const AddRequest&, Result<Added> added) { done(std::move(added)); });
  });
  REQUIRE(first.is_ok());
  redis.command({"CONFIG", "RESETSTAT"});

  constexpr int kAdds = 20;
  int answered = 0, added = 0, existing = 0;
  for (int i = 0; i < kAdds; ++i) {
    // The last one repeats "first": a retried add, answered existing.
    std::string id = i == kAdds - 1 ? "first" : "j" + std::to_string(i);
    store.add(AddRequest{"t", id, "{}", {true, 60000}, {}, {}, {}},
              [&](const AddRequest&, Result<Added> result) {
                ++answered;
                REQUIRE(result.is_ok());
                (result->existing ? existing : added)++;
              });
  }
  int64_t deadline = monotonic_ms() + 10000;
  while (answered < kAdds && monotonic_ms() < deadline) {
    event_base_loop(waiter.base(), EVLOOP_ONCE);
  }
  CHECK(answered == kAdds);
  CHECK(added == kAdds - 1);
  CHECK(existing == 1);
  CHECK(calls_of(redis, "fcall") == 1);
  CHECK(record_count(redis) == kAdds);
  check_consistent(redis);
}

TEST_CASE("a wake wait longer than the command timeout runs its full time and is not failed") {
  TestRedis redis;
  LoopWaiter waiter;
  AsyncJobStore store(waiter.base(), config_over(redis, 300));
  connect(waiter, store);
  int64_t start = monotonic_ms();
  auto woken = waiter.wait<Result<bool>>(
      [&](auto done) { store.wait_wake(0, WakeList::kConsumer, 1200, done); });
  REQUIRE(woken.is_ok());
  CHECK_FALSE(*woken);
  CHECK(monotonic_ms() - start >= 1000);
  CHECK(store.health().front().up);  // the connection was not dropped as slow

  // A token already there is taken at once.
  redis.command({"RPUSH", keys::consumer_wake(), "1"});
  woken = waiter.wait<Result<bool>>(
      [&](auto done) { store.wait_wake(0, WakeList::kConsumer, 1200, done); });
  REQUIRE(woken.is_ok());
  CHECK(*woken);
}

TEST_CASE("a get waits for the id's home up to the command timeout, not the probe timeout") {
  TestRedis redis;
  DelayProxy proxy(redis.port(), 100);  // each way: a slow home that answers
  Config config = config_over(redis, 3000, proxy.port());
  config.redis_probe_timeout_ms = 50;  // below the home's round trip
  LoopWaiter waiter;
  AsyncJobStore store(waiter.base(), config);
  connect(waiter, store);
  auto added = waiter.wait<Result<Added>>([&](auto done) {
    store.add(AddRequest{"t", "1", "{}", {true, 60000}, {}, {}, {}},
              [done](const AddRequest&, Result<Added> result) { done(std::move(result)); });
  });
  REQUIRE(added.is_ok());

  // The home is the one shard that can hold the job: its 200 ms answer is
  // waited for (probe_timeout_ms bounds the asks of another home, while a
  // shard joins or drains), not a 503 saying it did not answer in time.
  auto got = waiter.wait<Result<Job>>([&](auto done) { store.get("t", "1", done); });
  CHECK_MESSAGE(got.is_ok(), got.status().message());
  if (got.is_ok()) {
    CHECK(got->id == "1");
  }
}

TEST_CASE("a delete whose reply does not come is 504 outcome unknown, and safe to retry") {
  TestRedis redis;
  DelayProxy proxy(redis.port(), 1000);  // each way
  Config config = config_over(redis, 3000, proxy.port());
  config.redis_probe_timeout_ms = 10000;
  LoopWaiter waiter;
  AsyncJobStore store(waiter.base(), config);
  connect(waiter, store);
  auto added = waiter.wait<Result<Added>>([&](auto done) {
    store.add(AddRequest{"t", "1", "{}", {true, 60000}, {}, {}, {}},
              [done](const AddRequest&, Result<Added> result) { done(std::move(result)); });
  });
  REQUIRE(added.is_ok());

  // del.lua goes to the job's home alone; the proxy holds it 10 s, longer
  // than the command timeout: it may run, the answer does not come.
  proxy.set_delay(10000);
  std::optional<Status> deleted;
  store.del("t", "1", [&](const Status& status, bool) { deleted = status; });
  int64_t deadline = monotonic_ms() + 20000;
  while (!deleted && monotonic_ms() < deadline) {
    event_base_loop(waiter.base(), EVLOOP_ONCE);
  }
  REQUIRE(deleted.has_value());
  CHECK(deleted->code() == Code::kUnknown);
  CHECK(deleted->message().find("outcome unknown") != std::string::npos);

  // The retry, once Redis answers again, deletes the job or finds it gone.
  proxy.set_delay(0);
  BlockingJobStore direct({redis.shard()}, 1000, 2000);
  Status again = direct.del("t", "1");
  CHECK((again.is_ok() || again.code() == Code::kNotFound));
  CHECK(direct.get("t", "1").status().code() == Code::kNotFound);
  check_consistent(redis);
}

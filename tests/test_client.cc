// Tests of libdqclient (client/include/dq/client.h) against real dqd
// processes: two on different ports sharing one redis-server, so failover
// from one to the other reaches the same jobs. Also timeouts against a
// socket that accepts and never answers, and typed errors.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/core/listen.h"
#include "dq/client.h"
#include "tests/support/dqd_process.h"
#include "tests/support/redis_server.h"

namespace dc = dq::client;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::TestRedis;

namespace {

struct TwoServers {
  TestRedis redis;
  std::unique_ptr<DqdProcess> first;
  std::unique_ptr<DqdProcess> second;
  TwoServers() {
    DqdOptions options;
    options.shards = {redis.address()};
    options.drain_timeout_ms = 1000;
    options.extra_ini = "[server]\nmax_body_bytes = 1000\n";
    first = std::make_unique<DqdProcess>(options);
    second = std::make_unique<DqdProcess>(options);
    for (DqdProcess* dqd : {first.get(), second.get()}) {
      dqd->add_topic("orders");
      dqd->start();
    }
  }
  static std::string address(const DqdProcess& dqd) {
    return "127.0.0.1:" + std::to_string(dqd.http_port());
  }
};

TwoServers& servers() {
  static TwoServers instance;
  return instance;
}

dc::Options first_only() {
  dc::Options options;
  options.servers = {TwoServers::address(*servers().first)};
  return options;
}

std::string unique_id(const char* prefix) {
  static int counter = 0;
  return std::string(prefix) + "-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
}

}  // namespace

TEST_CASE("add, get, del and add_batch return typed values") {
  dc::Client client(first_only());
  std::string id = unique_id("job");
  int64_t before = dq::now_ms();
  auto added = client.add("orders", id, R"({"amount":42})", dc::When::delay(600));
  REQUIRE_MESSAGE(added.ok(), added.error().message);
  CHECK(added->topic == "orders");
  CHECK(added->id == id);
  CHECK(added->due_at_ms >= before + 600000);
  CHECK(added->due_at_ms <= dq::now_ms() + 600000);
  CHECK(client.last_server() == TwoServers::address(*servers().first));

  auto job = client.get("orders", id);
  REQUIRE_MESSAGE(job.ok(), job.error().message);
  CHECK(job->body_json == R"({"amount":42})");
  CHECK(job->state == dc::JobState::Delayed);
  CHECK(job->attempts == 0);
  CHECK(job->due_at_ms == added->due_at_ms);
  CHECK(job->created_at_ms >= before);
  CHECK_FALSE(job->last_error.has_value());

  auto deleted = client.del("orders", id);
  CHECK(deleted.ok());
  auto gone = client.get("orders", id);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == dc::ErrorCode::NotFound);

  int64_t at = dq::now_ms() / 1000 + 7200;
  auto fixed = client.add("orders", unique_id("at"), R"("text body")", dc::When::at(at));
  REQUIRE(fixed.ok());
  CHECK(fixed->due_at_ms == at * 1000);

  // A wall time in a zone, and a ttl after it: 09:00 in Shanghai is 01:00 UTC.
  std::string zoned_id = unique_id("zoned");
  auto zoned = client.add(
      "orders", zoned_id, "1",
      dc::When::at(std::string("2036-07-01 09:00")).in_zone("Asia/Shanghai").with_ttl(30));
  REQUIRE_MESSAGE(zoned.ok(), zoned.error().message);
  CHECK(zoned->due_at_ms == int64_t{2098486800000});
  auto zoned_job = client.get("orders", zoned_id);
  REQUIRE(zoned_job.ok());
  CHECK(dq::Json::parse(zoned_job->raw_json)["expires_at_ms"] == int64_t{2098486830000});
  auto never = client.add("orders", unique_id("never"), "1",
                          dc::When::delay(600).with_expire_at("+1 minutes"));
  REQUIRE_FALSE(never.ok());
  CHECK(never.error().code == dc::ErrorCode::InvalidArgument);

  std::string a = unique_id("batch");
  std::string b = unique_id("batch");
  auto batch = client.add_batch("orders", {{a, R"({"n":1})", dc::When::delay(60)},
                                           {"bad\x01id", "1", dc::When()},
                                           {b, "[1,2]", dc::When::at(at)},
                                           {a, "2", dc::When()}});
  REQUIRE_MESSAGE(batch.ok(), batch.error().message);
  REQUIRE(batch->size() == 4);
  CHECK((*batch)[0].ok());
  CHECK((*batch)[0].status == 201);
  CHECK((*batch)[0].due_at_ms.has_value());
  CHECK_FALSE((*batch)[1].ok());
  CHECK((*batch)[1].status == 400);
  CHECK((*batch)[1].error->code == dc::ErrorCode::InvalidArgument);
  CHECK((*batch)[2].ok());
  CHECK((*batch)[2].due_at_ms == at * 1000);
  CHECK((*batch)[3].error->code == dc::ErrorCode::Conflict);
  auto read_back = client.get("orders", b);
  REQUIRE(read_back.ok());
  CHECK(read_back->body_json == "[1,2]");
}

TEST_CASE("ids are percent-encoded in paths, and bodies are sent as written") {
  dc::Client client(first_only());
  const std::string body = "{\"z\":1, \"a\":1e2, \"s\":\"\\u00e9\"}";
  for (std::string id :
       {"订单-" + unique_id("u"), "a/b #1?x=" + unique_id("p"), "user|42+" + unique_id("q")}) {
    CAPTURE(id);
    auto added = client.add("orders", id, body, dc::When::delay(600));
    REQUIRE_MESSAGE(added.ok(), added.error().message);
    CHECK(added->id == id);
    auto job = client.get("orders", id);
    REQUIRE_MESSAGE(job.ok(), job.error().message);
    CHECK(job->id == id);
    CHECK(job->raw_json.find("\"body\":" + body) != std::string::npos);  // byte for byte
    CHECK(client.del("orders", id).ok());
    CHECK(client.get("orders", id).error().code == dc::ErrorCode::NotFound);
  }
  std::string batched = "a/b " + unique_id("batch");
  auto batch = client.add_batch("orders", {{batched, body, dc::When::delay(600)}});
  REQUIRE(batch.ok());
  CHECK((*batch)[0].status == 201);
  auto job = client.get("orders", batched);
  REQUIRE(job.ok());
  CHECK(job->raw_json.find("\"body\":" + body) != std::string::npos);
}

TEST_CASE("errors are typed, with the HTTP status and the server's message") {
  dc::Client client(first_only());
  auto unknown = client.add("no-such-topic", "x", "1");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == dc::ErrorCode::NotFound);
  CHECK(unknown.error().http_status == 404);
  CHECK(unknown.error().message.find("unknown topic") != std::string::npos);

  std::string id = unique_id("dup");
  REQUIRE(client.add("orders", id, "1").ok());
  auto retried = client.add("orders", id, "1");  // same body: a retry, answered 200
  REQUIRE(retried.ok());
  CHECK(retried->existing);
  auto duplicate = client.add("orders", id, "2");
  REQUIRE_FALSE(duplicate.ok());
  CHECK(duplicate.error().code == dc::ErrorCode::Conflict);
  CHECK(duplicate.error().http_status == 409);

  auto bad_id = client.add("orders", "bad\x01id", "1");
  REQUIRE_FALSE(bad_id.ok());
  CHECK(bad_id.error().code == dc::ErrorCode::InvalidArgument);
  CHECK(bad_id.error().http_status == 400);

  auto bad_time =
      client.add("orders", unique_id("t"), "1", dc::When::at(std::string("2026-02-30 10:00:00")));
  REQUIRE_FALSE(bad_time.ok());
  CHECK(bad_time.error().code == dc::ErrorCode::InvalidArgument);

  auto too_large = client.add("orders", unique_id("big"), "\"" + std::string(2000, 'x') + "\"");
  REQUIRE_FALSE(too_large.ok());
  CHECK(too_large.error().code == dc::ErrorCode::TooLarge);
  CHECK(too_large.error().http_status == 413);

  // Refused before sending: no server involved.
  auto not_json = client.add("orders", unique_id("nj"), "plain text");
  REQUIRE_FALSE(not_json.ok());
  CHECK(not_json.error().code == dc::ErrorCode::InvalidArgument);
  CHECK(not_json.error().http_status == 0);

  auto missing = client.del("orders", unique_id("missing"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == dc::ErrorCode::NotFound);
  CHECK(std::string(dc::error_code_name(missing.error().code)) == "NotFound");
}

TEST_CASE("a timeout is honoured: a server that accepts and never answers gives Timeout") {
  auto listening = dq::listen_on("127.0.0.1:" + std::to_string(dq::test::free_port()));
  REQUIRE(listening.is_ok());
  int silent_fd = *listening;
  std::string silent = "127.0.0.1:" + std::to_string([&] {
                         sockaddr_in address{};
                         socklen_t length = sizeof address;
                         getsockname(silent_fd, reinterpret_cast<sockaddr*>(&address), &length);
                         return ntohs(address.sin_port);
                       }());

  dc::Options options;
  options.servers = {silent};
  options.timeout_ms = 400;
  options.retries = 0;  // one attempt: the timeout alone is measured here
  dc::Client client(options);
  int64_t started = dq::monotonic_ms();
  auto added = client.add("orders", unique_id("slow"), "1");
  int64_t took = dq::monotonic_ms() - started;
  REQUIRE_FALSE(added.ok());
  CHECK(added.error().code == dc::ErrorCode::Timeout);
  CHECK(added.error().http_status == 0);
  CHECK(added.error().server == silent);
  CHECK(took >= 350);
  CHECK(took < 1400);

  // With a working server behind it, the call fails over after one timeout.
  options.servers = {silent, TwoServers::address(*servers().first)};
  dc::Client failover(options);
  started = dq::monotonic_ms();
  auto via_second = failover.add("orders", unique_id("after-slow"), "1");
  took = dq::monotonic_ms() - started;
  REQUIRE_MESSAGE(via_second.ok(), via_second.error().message);
  CHECK(took < 1400);
  CHECK(failover.servers()[0].down);
  // The silent server is now skipped: the next call does not wait for it.
  started = dq::monotonic_ms();
  CHECK(failover.get("orders", via_second->id).ok());
  CHECK(dq::monotonic_ms() - started < 300);

  // With retries, a timed-out call is tried again after a back-off, each
  // attempt bounded by the same timeout.
  options.servers = {silent};
  options.retries = 2;
  options.retry_backoff_ms = 100;
  dc::Client retrying(options);
  started = dq::monotonic_ms();
  auto retried = retrying.add("orders", unique_id("slow-retry"), "1");
  took = dq::monotonic_ms() - started;
  REQUIRE_FALSE(retried.ok());
  CHECK(retried.error().code == dc::ErrorCode::Timeout);
  CHECK(retried.error().message.find("3 round(s)") != std::string::npos);
  CHECK(took >= 3 * 350 + 300);
  CHECK(took < 3 * 400 + 300 + 1000);
  close(silent_fd);
}

TEST_CASE(
    "failover: the second server answers while the first is stopped, and the first is used again") {
  TwoServers& two = servers();
  dc::Options options;
  options.servers = {TwoServers::address(*two.first), TwoServers::address(*two.second)};
  options.down_backoff_ms = 300;
  options.timeout_ms = 2000;
  options.retries = 0;  // the back-off of down servers is what is checked here
  dc::Client client(options);
  std::string id = unique_id("fo");
  REQUIRE(client.add("orders", id, R"({"step":1})").ok());
  CHECK(client.last_server() == options.servers[0]);

  REQUIRE(two.first->stop() == 0);  // SIGTERM
  auto during = client.get("orders", id);
  REQUIRE_MESSAGE(during.ok(), during.error().message);
  CHECK(during->body_json == R"({"step":1})");
  CHECK(client.last_server() == options.servers[1]);
  auto states = client.servers();
  CHECK(states[0].down);
  CHECK_FALSE(states[1].down);
  CHECK(client.add("orders", unique_id("fo"), "2").ok());
  CHECK(client.last_server() == options.servers[1]);

  // Both down: Unavailable, naming both.
  REQUIRE(two.second->stop() == 0);
  auto nowhere = client.get("orders", id);
  REQUIRE_FALSE(nowhere.ok());
  CHECK(nowhere.error().code == dc::ErrorCode::Unavailable);
  CHECK(nowhere.error().message.find(options.servers[0]) != std::string::npos);
  CHECK(nowhere.error().message.find(options.servers[1]) != std::string::npos);

  // Back again: after its back-off the first server is tried (and used) again.
  two.first->start();
  two.second->start();
  std::this_thread::sleep_for(
      std::chrono::milliseconds(700));  // past both back-offs (300, then 600 ms)
  auto back = client.get("orders", id);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(client.last_server() == options.servers[0]);
  CHECK_FALSE(client.servers()[0].down);
  CHECK(client.del("orders", id).ok());
}

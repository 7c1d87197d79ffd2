// End-to-end tests of the legacy framed protocol: raw TCP sockets against a
// real dqd over a real redis-server. Covers each command, frames split into
// 1-byte writes, pipelined frames, garbage, oversized lengths, unknown cmd,
// the topic's default delay without fix_time, a graceful stop, and an id
// whose home shard is down.
#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/core/shard.h"
#include "common/store/job.h"
#include "server/legacy_frame.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/shared_dqd.h"

using dq::Json;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::LegacySocket;
using dq::test::SharedDqd;
using dq::test::TestRedis;

namespace {

// One dqd for the whole file.
SharedDqd& env() {
  static SharedDqd instance(
      [] {
        DqdOptions options;
        options.extra_ini = "[server]\nmax_body_bytes = 2000\n";
        return options;
      }(),
      {{"orders"}, {"later", "http://127.0.0.1:9/none", 120}});
  return instance;
}

std::string local_datetime(int64_t unix_seconds) {
  time_t seconds = static_cast<time_t>(unix_seconds);
  tm parts{};
  localtime_r(&seconds, &parts);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts);
  return text;
}

Json http_job(const std::string& topic, const std::string& id) {
  auto got = dq::test::http_request("GET", env().dqd->jobs_url(topic) + "/" + id);
  return got.status == 200 ? got.json() : Json();
}

Json add_request(const std::string& id, const Json& body, const std::string& fix_time) {
  return Json{
      {"cmd", "add"}, {"topic", "orders"}, {"id", id}, {"body", body}, {"fix_time", fix_time}};
}

// A get's data is the body with the PHP queue's notify_time and dq_set_time
// added (docs/legacy-protocol.md); they are compared only when `data` has them.
void check_success(const Json& reply, const Json& data) {
  REQUIRE(reply.is_object());
  CHECK(reply["code"] == 1);
  CHECK(reply["msg"] == "succ");
  Json got = reply["data"];
  for (const char* added : {"notify_time", "dq_set_time"}) {
    if (got.is_object() && data.is_object() && !data.contains(added)) {
      got.erase(added);
    }
  }
  CHECK(got == data);
}

void check_failure(const Json& reply, const std::string& msg_part) {
  REQUIRE(reply.is_object());
  CHECK(reply["code"] == 0);
  CHECK(reply["data"] == Json::array());
  REQUIRE(reply["msg"].is_string());
  CHECK_MESSAGE(reply["msg"].get<std::string>().find(msg_part) != std::string::npos, reply["msg"]);
}

}  // namespace

TEST_CASE("add with fix_time, get returns the body, del removes it") {
  LegacySocket socket(env().dqd->legacy_port());
  int64_t at = dq::now_ms() / 1000 + 3600;
  Json body{{"order", 42}, {"note", "caf\xc3\xa9"}};
  check_success(socket.call(add_request("legacy-1", body, local_datetime(at))), Json::array());

  Json stored = http_job("orders", "legacy-1");
  REQUIRE(stored.is_object());
  CHECK(stored["due_at_ms"] == at * 1000);
  CHECK(stored["body"] == body);

  // get returns the body with the PHP queue's own fields, as its server did.
  Json with_fields = body;
  with_fields["notify_time"] = local_datetime(at);
  with_fields["dq_set_time"] = local_datetime(stored["created_at_ms"].get<int64_t>() / 1000);
  check_success(socket.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "legacy-1"}}),
                with_fields);
  check_success(socket.call(Json{{"cmd", "del"}, {"topic", "orders"}, {"id", "legacy-1"}}),
                Json::array());
  check_failure(socket.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "legacy-1"}}),
                "not found");
  CHECK(http_job("orders", "legacy-1").is_null());
}

TEST_CASE("without fix_time (or with null) the topic's default delay applies; \"\" means now") {
  LegacySocket socket(env().dqd->legacy_port());
  int64_t before = dq::now_ms();
  check_success(
      socket.call(Json{{"cmd", "add"}, {"topic", "later"}, {"id", "d-1"}, {"body", {{"a", 1}}}}),
      Json::array());
  check_success(socket.call(Json{{"cmd", "add"},
                                 {"topic", "later"},
                                 {"id", "d-2"},
                                 {"body", {{"a", 2}}},
                                 {"fix_time", nullptr}}),
                Json::array());
  check_success(socket.call(Json{{"cmd", "add"},
                                 {"topic", "later"},
                                 {"id", "d-3"},
                                 {"body", {{"a", 3}}},
                                 {"fix_time", ""}}),
                Json::array());
  Json now_job = http_job("later", "d-3");
  REQUIRE(now_job.is_object());
  CHECK(now_job["due_at_ms"].get<int64_t>() <= dq::now_ms() + 1000);
  for (const char* id : {"d-1", "d-2"}) {
    Json stored = http_job("later", id);
    REQUIRE(stored.is_object());
    CHECK(stored["due_at_ms"].get<int64_t>() >= before + 120000);
    CHECK(stored["due_at_ms"].get<int64_t>() <= dq::now_ms() + 120000);
  }
}

TEST_CASE(
    "refusals are code 0 replies with the same reasons as the HTTP API, and the connection stays "
    "usable") {
  LegacySocket socket(env().dqd->legacy_port());
  check_success(socket.call(add_request("dup-1", Json{{"x", 1}}, "")), Json::array());
  // The same body again is a retry (success); another body a conflict.
  check_success(socket.call(add_request("dup-1", Json{{"x", 1}}, "")), Json::array());
  check_failure(socket.call(add_request("dup-1", Json{{"x", 2}}, "")), "already pending");
  check_failure(socket.call(Json{{"cmd", "add"}, {"topic", "nope"}, {"id", "a"}, {"body", 1}}),
                "unknown topic");
  check_failure(socket.call(add_request("bad\nid", Json{{"x", 1}}, "")), "not valid");
  check_failure(socket.call(add_request("bad-time", Json{{"x", 1}}, "2026-02-30 10:00:00")), "");
  // No body is a null body, as the PHP client meant it (not a refusal).
  check_success(socket.call(Json{{"cmd", "add"}, {"topic", "orders"}, {"id", "no-body"}}),
                Json::array());
  check_failure(socket.call(add_request("big", Json(std::string(2100, 'x')), "")), "limit");
  check_failure(socket.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "missing"}}),
                "not found");
  check_failure(socket.call(Json{{"cmd", "del"}, {"topic", "orders"}, {"id", "missing"}}), "");
  check_failure(socket.call(Json{{"cmd", "push"}, {"topic", "orders"}, {"id", "x"}}),
                "unknown cmd 'push'");
  check_failure(socket.call(Json{{"topic", "orders"}, {"id", "x"}}), "unknown cmd");
  // A frame whose JSON does not parse: the length is known, so the stream goes on.
  socket.send_raw("0005{oops");
  check_failure(socket.read_reply(), "not a JSON object");
  check_failure(socket.call(Json::array({1, 2})), "not a JSON object");
  // Integer ids (PHP order numbers) are taken as their decimal text.
  check_success(socket.call(Json{{"cmd", "add"}, {"topic", "orders"}, {"id", 777}, {"body", "n"}}),
                Json::array());
  check_success(socket.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "777"}}), "n");
}

TEST_CASE("a frame written one byte at a time is reassembled") {
  LegacySocket socket(env().dqd->legacy_port());
  std::string frame =
      dq::frame_legacy_json(add_request("split-1", Json{{"bytes", "one by one"}}, "").dump());
  for (char byte : frame) {
    socket.send_raw(std::string(1, byte));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  check_success(socket.read_reply(), Json::array());
  check_success(socket.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "split-1"}}),
                Json{{"bytes", "one by one"}});
}

TEST_CASE("pipelined frames in one write are answered in order") {
  LegacySocket socket(env().dqd->legacy_port());
  std::string bytes;
  bytes += dq::frame_legacy_json(add_request("pipe-1", Json{{"n", 1}}, "").dump());
  bytes += dq::frame_legacy_json(add_request("pipe-2", Json{{"n", 2}}, "").dump());
  bytes +=
      dq::frame_legacy_json(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "pipe-1"}}.dump());
  bytes += dq::frame_legacy_json(Json{{"cmd", "nonsense"}}.dump());
  bytes +=
      dq::frame_legacy_json(Json{{"cmd", "del"}, {"topic", "orders"}, {"id", "pipe-1"}}.dump());
  bytes +=
      dq::frame_legacy_json(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "pipe-1"}}.dump());
  bytes +=
      dq::frame_legacy_json(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "pipe-2"}}.dump());
  socket.send_raw(bytes);
  check_success(socket.read_reply(), Json::array());
  check_success(socket.read_reply(), Json::array());
  check_success(socket.read_reply(), Json{{"n", 1}});
  check_failure(socket.read_reply(), "unknown cmd");
  check_success(socket.read_reply(), Json::array());
  check_failure(socket.read_reply(), "not found");
  check_success(socket.read_reply(), Json{{"n", 2}});

  // Many frames at once, with the last one split across two writes.
  std::string many;
  for (int i = 0; i < 200; ++i) {
    many +=
        dq::frame_legacy_json(add_request("many-" + std::to_string(i), Json{{"i", i}}, "").dump());
  }
  socket.send_raw(many.substr(0, many.size() - 7));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  socket.send_raw(many.substr(many.size() - 7));
  for (int i = 0; i < 200; ++i) {
    check_success(socket.read_reply(), Json::array());
  }
  CHECK(http_job("orders", "many-199")["body"] == Json{{"i", 199}});
}

TEST_CASE("garbage gets a code 0 reply and the connection is closed") {
  LegacySocket socket(env().dqd->legacy_port());
  socket.send_raw("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  check_failure(socket.read_reply(), "bad frame");
  CHECK(socket.closed_by_server());

  // The server is still fine for the next client.
  LegacySocket next(env().dqd->legacy_port());
  check_success(next.call(add_request("after-garbage", 1, "")), Json::array());
}

TEST_CASE("an oversized length is refused with a reply instead of corrupting the stream") {
  SUBCASE("a length of five digits") {
    LegacySocket socket(env().dqd->legacy_port());
    std::string json = add_request("huge", std::string(12000, 'x'), "").dump();
    socket.send_raw(std::to_string(json.size()) + json);
    check_failure(socket.read_reply(), "frame too large");
    CHECK(socket.closed_by_server());
  }
  SUBCASE("a length over max_body_bytes + overhead, refused before the JSON arrives") {
    LegacySocket socket(env().dqd->legacy_port());
    socket.send_raw("9000{\"cmd\":\"add\"");
    check_failure(socket.read_reply(), "frame too large");
    CHECK(socket.closed_by_server());
  }
  LegacySocket next(env().dqd->legacy_port());
  check_success(next.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "after-garbage"}}), 1);
}

TEST_CASE("a half-closed connection still gets its replies; an idle one is not cut") {
  LegacySocket socket(env().dqd->legacy_port());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // idle for a while
  check_success(socket.call(add_request("idle-1", 1, "")), Json::array());

  socket.send_json(add_request("half-1", 1, ""));
  socket.send_json(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "half-1"}});
  socket.shutdown_write();
  check_success(socket.read_reply(), Json::array());
  check_success(socket.read_reply(), 1);
  CHECK(socket.closed_by_server());
}

TEST_CASE("SIGTERM: open legacy connections are answered and closed, dqd exits cleanly") {
  TestRedis redis;
  DqdOptions options;
  options.shards = {redis.address()};
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  LegacySocket idle(dqd.legacy_port());
  LegacySocket busy(dqd.legacy_port());
  check_success(busy.call(add_request("stop-1", 1, "")), Json::array());
  int64_t started = dq::monotonic_ms();
  CHECK(dqd.stop() == 0);
  CHECK(dq::monotonic_ms() - started <
        3000);  // not the 5 s drain deadline: idle connections closed at once
  CHECK(idle.closed_by_server(1000));
  CHECK(busy.closed_by_server(1000));
}

TEST_CASE(
    "an id whose home shard is down: add, get and del answer code 0 naming it, nothing "
    "written; the other shard's ids go on") {
  TestRedis first;
  TestRedis second;
  DqdOptions options;
  options.shards = {first.address(), second.address()};
  options.extra_ini = "[redis]\ncommand_timeout_ms = 500\n";
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  std::vector<dq::ShardAddress> shards = {first.shard(), second.shard()};
  auto homed_on = [&](size_t home, const std::string& prefix) {
    for (int i = 0;; ++i) {
      std::string id = prefix + std::to_string(i);
      if (dq::shard_order(shards, dq::job_key("orders", id)).front() == home) return id;
    }
  };
  std::string on_second = homed_on(1, "down-");
  std::string on_first = homed_on(0, "up-");
  LegacySocket socket(dqd.legacy_port());
  const std::string later = local_datetime(dq::now_ms() / 1000 + 3600);
  check_success(socket.call(add_request(on_second, 1, later)), Json::array());
  second.stop();
  // Seen down by dq's connection (it reconnects every 500 ms meanwhile).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string again = homed_on(1, "again-");
  for (const Json& request :
       {add_request(again, 1, later), Json{{"cmd", "get"}, {"topic", "orders"}, {"id", on_second}},
        Json{{"cmd", "del"}, {"topic", "orders"}, {"id", on_second}}}) {
    Json reply = socket.call(request);
    CAPTURE(request.dump());
    check_failure(reply, second.address());
    check_failure(reply, "retry later");
  }
  check_success(socket.call(add_request(on_first, 1, later)), Json::array());
  // Back: the add, sent again, is taken; the first job is still there.
  second.start();
  Json reply;
  for (int i = 0; i < 100; ++i) {
    reply = socket.call(add_request(again, 1, later));
    if (reply["code"] == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  check_success(reply, Json::array());
  check_success(socket.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", on_second}}), 1);
  CHECK(dqd.stop() == 0);
}

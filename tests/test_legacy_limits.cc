// Limits on the legacy port (server/legacy_server.cc): a connection over
// [server] max_connections takes the place of the one idle the longest, or,
// with none idle, gets a code 0 reply; a frame over the size limit and a frame not
// whole within request_timeout_ms each get a code 0 reply and are closed; a
// silent connection is closed after legacy_idle_timeout_ms without a reply.
// Nothing is written to Redis.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "server/legacy_frame.h"
#include "tests/support/e2e.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/shared_dqd.h"

using dq::Json;
using dq::test::LegacySocket;
using dq::test::SharedDqd;

namespace {

SharedDqd& env() {
  static SharedDqd shared(
      [] {
        dq::test::DqdOptions options;
        options.extra_ini =
            "[server]\nmax_connections = 3\nrequest_timeout_ms = 600\n"
            "legacy_idle_timeout_ms = 1000\nmax_body_bytes = 100\n";
        return options;
      }(),
      {{"orders"}});
  return shared;
}

std::string add_frame(const std::string& id) {
  return dq::frame_legacy_json(
      Json{{"cmd", "add"}, {"topic", "orders"}, {"id", id}, {"body", {{"n", 1}}}}.dump());
}

void check_refused(const Json& reply, const std::string& part) {
  CAPTURE(reply.dump());
  REQUIRE(reply.is_object());
  CHECK(reply["code"] == 0);
  CHECK(reply["msg"].get<std::string>().find(part) != std::string::npos);
}

}  // namespace

TEST_CASE("at max_connections the idle longest makes room; none idle: code 0 and closed") {
  std::string before = env().redis.dump_all();
  int port = env().dqd->legacy_port();
  const Json get{{"cmd", "get"}, {"topic", "orders"}, {"id", "none"}};
  // Three answered, idle connections: a fourth is served, the first (idle the
  // longest) is closed for it.
  std::vector<std::unique_ptr<LegacySocket>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(std::make_unique<LegacySocket>(port));
    CHECK(open.back()->call(get)["msg"] == "job orders/none not found");
  }
  CHECK(open[0]->closed_by_server());
  open.clear();

  // Three connections each holding part of a frame: none is idle, so one
  // more gets code 0 and is closed. (A busy one the server had not read yet
  // looked idle and may have made room, and request_timeout_ms ends a part
  // frame: those are opened again.)
  std::vector<std::unique_ptr<LegacySocket>> busy(3);
  bool refused = dq::test::wait_until(10000, [&] {
    for (auto& connection : busy) {
      if (!connection || connection->closed_by_server(1)) {
        connection = std::make_unique<LegacySocket>(port);
        connection->send_raw(add_frame("busy").substr(0, 10));  // never finished
      }
    }
    LegacySocket extra(port);
    extra.send_raw(dq::frame_legacy_json(get.dump()));
    Json reply = extra.read_reply();
    if (!reply.is_object() || reply["code"] != 0 ||
        reply["msg"].get<std::string>().find("max_connections") == std::string::npos) {
      return false;
    }
    CHECK(extra.closed_by_server());
    return true;
  });
  CHECK(refused);
  busy.clear();
  CHECK(env().redis.dump_all() == before);
  CHECK(dq::test::wait_until(3000, [] {
    LegacySocket next(env().dqd->legacy_port());
    return next.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "none"}})["msg"] ==
           "job orders/none not found";
  }));
}

TEST_CASE("a frame over the size limit gets code 0 and the connection is closed") {
  std::string before = env().redis.dump_all();
  LegacySocket socket(env().dqd->legacy_port());
  // max_body_bytes 100 + 1024 bytes for the other fields.
  std::string json =
      Json{{"cmd", "add"}, {"topic", "orders"}, {"id", "big"}, {"body", std::string(1500, 'x')}}
          .dump();
  socket.send_raw(dq::frame_legacy_json(json));
  check_refused(socket.read_reply(), "frame too large");
  CHECK(socket.closed_by_server());
  CHECK(env().redis.dump_all() == before);
}

TEST_CASE("a frame not whole within request_timeout_ms gets code 0 and is closed") {
  std::string before = env().redis.dump_all();
  SUBCASE("a frame that stops half way") {
    LegacySocket socket(env().dqd->legacy_port());
    std::string frame = add_frame("half");
    int64_t started = dq::monotonic_ms();
    socket.send_raw(frame.substr(0, frame.size() / 2));
    check_refused(socket.read_reply(3000), "request_timeout_ms");
    int64_t took = dq::monotonic_ms() - started;
    CHECK(took >= 500);
    CHECK(socket.closed_by_server());
  }
  SUBCASE("a byte every 100 ms") {
    LegacySocket socket(env().dqd->legacy_port());
    std::string frame = add_frame("slow");  // ~70 bytes: 7 s at this pace
    size_t sent = 0;
    for (; sent < frame.size() && !socket.closed_by_server(100); ++sent) {
      socket.send_raw(frame.substr(sent, 1));
    }
    MESSAGE("closed after ", sent, " of ", frame.size(), " bytes");
    CHECK(sent < frame.size());
  }
  CHECK(env().redis.dump_all() == before);
}

TEST_CASE("a silent connection is closed after legacy_idle_timeout_ms, with no reply") {
  LegacySocket socket(env().dqd->legacy_port());
  CHECK(socket.call(Json{{"cmd", "get"}, {"topic", "orders"}, {"id", "none"}})["code"] == 0);
  CHECK_FALSE(socket.closed_by_server(500));  // not before the timeout
  CHECK(socket.closed_by_server(3000));
  CHECK(socket.read_frame(100).empty());  // nothing unasked was sent
}

TEST_CASE("a connection in use is not cut: requests keep coming within the idle timeout") {
  LegacySocket socket(env().dqd->legacy_port());
  for (int i = 0; i < 4; ++i) {
    dq::test::sleep_ms(400);  // 1.6 s in all, over the 1 s idle timeout
    Json reply = socket.call(Json{{"cmd", "add"},
                                  {"topic", "orders"},
                                  {"id", "busy-" + std::to_string(i)},
                                  {"body", {{"n", i}}}});
    CHECK(reply["code"] == 1);
  }
}

// Ids are any UTF-8 text of 1-256 bytes without control characters. They go
// through HTTP (percent-encoded in paths: split on '/' first, then decoded,
// '+' kept), the legacy port and the callback unchanged; anything else is
// refused with a reason and nothing is stored. Real redis-server, real dqd
// (API, timer, consumer), real callback server.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/http_client.h"
#include "tests/support/job_records.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/run_program.h"
#include "tests/support/shared_dqd.h"

using dq::Json;
using dq::test::contains;
using dq::test::LegacySocket;

namespace {

struct Env {
  dq::test::CallbackServer callback;  // first: a topic names its URL
  dq::test::SharedDqd shared;
  Env()
      : shared(
            [] {
              dq::test::DqdOptions options;
              options.timers = 1;
              options.consumers = 1;
              return options;
            }(),
            {{"held"}, {"hooked", callback.url("/hook")}}) {}
};

Env& env() {
  static Env instance;
  return instance;
}

std::string jobs_url(const std::string& topic) { return env().shared.dqd->jobs_url(topic); }

// Percent-encodes every byte but RFC 3986 unreserved characters.
std::string encode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// 256 bytes, multibyte characters included: 4 + 84 * 3.
std::string longest_id() {
  std::string id = "max-";
  while (id.size() < 256) {
    id += "订";
  }
  REQUIRE(id.size() == 256);
  return id;
}

std::vector<std::string> good_ids() {
  return {"订单1", "order#1", "a b", "a/b", "user|42", "a+b", "x?y=1&z=%41", longest_id()};
}

// The keys of the "held" topic's job records on the shard, sorted (jobs of
// "hooked" are acked whenever their callback is done).
std::vector<std::string> stored_keys() {
  std::vector<std::string> keys;
  for (const auto& [key, record] : dq::test::all_records(env().shared.redis)) {
    if (key.rfind("held:", 0) == 0) {
      keys.push_back(key);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string legacy_frame(const std::string& json) {
  char header[16];
  std::snprintf(header, sizeof header, "%04zu", json.size());
  return header + json;
}

std::string add_body(const std::string& id, double delay) {
  return Json{{"id", id}, {"body", Json{{"for", id}}}, {"delay", delay}}.dump();
}

}  // namespace

TEST_CASE("business ids: HTTP add, GET and DELETE with percent-encoded paths") {
  dq::test::HttpClient http;
  for (const auto& id : good_ids()) {
    CAPTURE(id);
    auto added = http.post(jobs_url("held"), add_body(id, 600));
    REQUIRE(added.status == 201);
    CHECK(added.json()["id"] == id);
    auto got = http.get(jobs_url("held") + "/" + encode(id));
    REQUIRE(got.status == 200);
    CHECK(got.json()["id"] == id);
    CHECK(got.json()["body"]["for"] == id);
  }
  // The path is split before it is decoded: an encoded '/' is part of the id,
  // a plain one is another path segment.
  CHECK(http.get(jobs_url("held") + "/a%2Fb").json()["id"] == "a/b");
  CHECK(http.get(jobs_url("held") + "/a/b").status == 404);
  CHECK(contains(http.get(jobs_url("held") + "/a/b").body, "no such route"));
  // '+' in a path is a plus, not a space: "a+b" and "a b" are two jobs.
  CHECK(http.get(jobs_url("held") + "/a+b").json()["id"] == "a+b");
  CHECK(http.get(jobs_url("held") + "/a%20b").json()["id"] == "a b");
  // Raw UTF-8 in the path works as well as its percent-encoding.
  CHECK(http.get(jobs_url("held") + "/订单1").json()["id"] == "订单1");

  for (const auto& id : good_ids()) {
    CAPTURE(id);
    CHECK(http.del(jobs_url("held") + "/" + encode(id)).status == 204);
    CHECK(http.get(jobs_url("held") + "/" + encode(id)).status == 404);
  }
}

TEST_CASE("business ids over the legacy port") {
  LegacySocket socket(env().shared.dqd->legacy_port());
  for (const auto& id : good_ids()) {
    CAPTURE(id);
    Json add{{"cmd", "add"},
             {"topic", "held"},
             {"id", id},
             {"body", {{"for", id}}},
             {"fix_time", "2030-01-01 00:00:00"}};
    CHECK(socket.call(add)["code"] == 1);
    Json got = socket.call(Json{{"cmd", "get"}, {"topic", "held"}, {"id", id}});
    CHECK(got["code"] == 1);
    CHECK(got["data"]["for"] == id);
    CHECK(socket.call(Json{{"cmd", "del"}, {"topic", "held"}, {"id", id}})["code"] == 1);
  }
}

TEST_CASE("business ids reach the callback unchanged") {
  dq::test::HttpClient http;
  for (const auto& id : good_ids()) {
    REQUIRE(http.post(jobs_url("hooked"), add_body(id, 0)).status == 201);
  }
  REQUIRE(env().callback.wait_for(good_ids().size(), 10000));
  std::vector<std::string> seen;
  for (const auto& request : env().callback.requests()) {
    Json body = Json::parse(request.body);
    CHECK(request.header("x-dq-id") == body["id"].get<std::string>());
    CHECK(body["body"]["for"] == body["id"]);
    seen.push_back(body["id"].get<std::string>());
  }
  std::vector<std::string> expected = good_ids();
  std::sort(seen.begin(), seen.end());
  std::sort(expected.begin(), expected.end());
  CHECK(seen == expected);
}

TEST_CASE("bad ids are refused with a 400 saying what an id may be, and nothing is stored") {
  dq::test::HttpClient http;
  std::vector<std::string> before = stored_keys();
  const char* rule = "1-256 bytes of UTF-8 text without control characters";

  for (const std::string& id :
       {std::string(257, 'a'), std::string("a\x01z"), std::string("tab\there"),
        std::string("del\x7f"), std::string("c1\xC2\x85")}) {
    CAPTURE(id);
    auto added = http.post(jobs_url("held"), add_body(id, 600));
    CHECK(added.status == 400);
    CHECK(contains(added.json()["error"].get<std::string>(), rule));
    auto got = http.get(jobs_url("held") + "/" + encode(id));
    CHECK(got.status == 400);
    CHECK(contains(got.json()["error"].get<std::string>(), rule));
    CHECK(http.del(jobs_url("held") + "/" + encode(id)).status == 400);
  }
  // Invalid UTF-8 cannot even be JSON text; in a path it reaches the id check.
  for (const std::string& bytes :
       {std::string("a\xFFz"), std::string("\xC0\xAF"), std::string("\xED\xA0\x80")}) {
    CAPTURE(encode(bytes));
    auto added = http.post(jobs_url("held"), "{\"id\":\"" + bytes + "\",\"body\":1,\"delay\":600}");
    CHECK(added.status == 400);
    CHECK(added.json()["error"].is_string());
    auto got = http.get(jobs_url("held") + "/" + encode(bytes));
    CHECK(got.status == 400);
    CHECK(contains(got.json()["error"].get<std::string>(), rule));
  }
  LegacySocket socket(env().shared.dqd->legacy_port());
  Json refused =
      socket.call(Json{{"cmd", "add"}, {"topic", "held"}, {"id", "a\x01z"}, {"body", 1}});
  CHECK(refused["code"] == 0);
  CHECK(contains(refused["msg"].get<std::string>(), rule));
  socket.send_raw(
      legacy_frame("{\"cmd\":\"add\",\"topic\":\"held\",\"id\":\"a\xFFz\",\"body\":1}"));
  CHECK(socket.read_reply()["code"] == 0);
  CHECK(stored_keys() == before);

  // A batch refuses the bad one and takes the good one.
  Json batch{{"jobs", Json::array({Json::parse(add_body("ok-in-batch", 600)),
                                   Json::parse(add_body("bad\x02", 600))})}};
  auto batched = http.post(jobs_url("held") + "/batch", batch.dump());
  REQUIRE(batched.status == 200);
  CHECK(batched.json()["results"][0]["status"] == 201);
  CHECK(batched.json()["results"][1]["status"] == 400);
  before.push_back("held:ok-in-batch");
  std::sort(before.begin(), before.end());
  CHECK(stored_keys() == before);
}

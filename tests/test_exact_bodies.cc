// The store keeps exactly what it was given: a job's body comes back from
// HTTP GET and legacy get, and reaches the callback, byte for byte as the
// producer wrote it (key order, number spelling, escapes, inner whitespace).
// Real redis-server, real dqd (API, timer, consumer), real callback server;
// requests are written as raw text so no JSON library sits in between.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/store/job_store.h"
#include "tests/support/callback_server.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/run_program.h"
#include "tests/support/shared_dqd.h"

using dq::Json;
using dq::test::contains;
using dq::test::LegacySocket;

namespace {

struct Env {
  dq::test::CallbackServer callback;  // first: the topics name its URL
  dq::test::SharedDqd shared;
  Env()
      : shared(
            [] {
              dq::test::DqdOptions options;
              options.timers = 1;
              options.consumers = 1;
              return options;
            }(),
            {{"held"},
             {"hooked", callback.url("/post")},
             {"hooked_get", callback.url("/get"), 0, "GET"},
             {"parked", callback.url("/parked"), 0, "POST", false}}) {}
};

Env& env() {
  static Env instance;
  return instance;
}

std::string jobs_url(const std::string& topic) { return env().shared.dqd->jobs_url(topic); }

// Bodies whose bytes any parse-and-dump would change.
const std::vector<std::string>& bodies() {
  static const std::vector<std::string> list = {
      R"({"z":1,"a":2,"e":1e2})",
      R"([1, 2.50, "x"])",
      R"("\u00e9t\u00e9")",
      "12.0",
      "null",
      // CRLF whitespace and a string that looks like a Redis command: the
      // server writes commands in Redis's wire format itself (resp_command).
      "{\r\n\"resp\": \"*1\\r\\n$4\\r\\nPING\"}",
      // One body over two lines (the literals are meant to join).
      ("{ \"订单\" : {\"items\": [ {\"名\":\"caf\\u00e9\", \"qty\": 1.50E+1} ],\n"
       "  \"note\": \"日本語 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/\"}, \"empty\":{ }, \"n\": -0 }"),
  };
  return list;
}

// A legacy get reply carries the body byte for byte; an object body (and a
// null one) gets the PHP queue's notify_time and dq_set_time appended, as the
// PHP server returned them (docs/legacy-protocol.md).
void check_legacy_data(const std::string& frame, const std::string& body) {
  std::string prefix = "{\"code\":1,\"data\":";
  if (body == "null") {
    Json data = Json::parse(frame)["data"];
    CHECK(data.size() == 2);
    CHECK(data.contains("notify_time"));
    CHECK(data.contains("dq_set_time"));
  } else if (body[0] == '{') {
    std::string open = prefix + body.substr(0, body.size() - 1) + ",\"notify_time\":\"";
    CHECK(frame.substr(0, open.size()) == open);
    CHECK(frame.find("\",\"dq_set_time\":\"") != std::string::npos);
  } else {
    CHECK(frame == prefix + body + ",\"msg\":\"succ\"}");
  }
}

// A framed legacy request written as raw text.
std::string legacy_frame(const std::string& json) {
  char header[16];
  std::snprintf(header, sizeof header, "%04zu", json.size());
  return header + json;
}

// The body's exact bytes appear in the reply, and the reply is valid JSON
// whose body is that value.
void check_reply_carries(const std::string& reply, const char* field, const std::string& body) {
  CAPTURE(reply);
  CHECK(contains(reply, std::string("\"") + field + "\":" + body));
  Json parsed = Json::parse(reply, nullptr, false);
  REQUIRE(parsed.is_object());
  CHECK(parsed[field] == Json::parse(body));
}

}  // namespace

TEST_CASE("HTTP add then GET returns the body byte for byte") {
  dq::test::HttpClient http;
  for (size_t i = 0; i < bodies().size(); ++i) {
    const std::string& body = bodies()[i];
    CAPTURE(body);
    std::string id = "h-" + std::to_string(i);
    // Whitespace around the value is not part of it; whitespace inside is.
    std::string request = "{\"id\":\"" + id + "\", \"body\" :  ";
    request += body;
    request += " \n, \"delay\":600}";
    REQUIRE(http.post(jobs_url("held"), request).status == 201);
    auto got = http.get(jobs_url("held") + "/" + id);
    REQUIRE(got.status == 200);
    check_reply_carries(got.body, "body", body);
  }
}

TEST_CASE("batch add then GET returns each body byte for byte") {
  dq::test::HttpClient http;
  std::string request = "{\"jobs\": [";
  for (size_t i = 0; i < bodies().size(); ++i) {
    request += (i ? " ,\n " : " ") + std::string("{\"body\": ") + bodies()[i] + ", \"id\": \"b-" +
               std::to_string(i) + "\", \"delay\": 600}";
  }
  request += "], \"ignored\": {\"body\": 1}}";
  auto added = http.post(jobs_url("held") + "/batch", request);
  REQUIRE(added.status == 200);
  for (size_t i = 0; i < bodies().size(); ++i) {
    CAPTURE(bodies()[i]);
    CHECK(added.json()["results"][i]["status"] == 201);
    auto got = http.get(jobs_url("held") + "/b-" + std::to_string(i));
    REQUIRE(got.status == 200);
    check_reply_carries(got.body, "body", bodies()[i]);
  }
}

TEST_CASE("legacy add then legacy get (and HTTP GET) return the body byte for byte") {
  LegacySocket socket(env().shared.dqd->legacy_port());
  dq::test::HttpClient http;
  for (size_t i = 0; i < bodies().size(); ++i) {
    const std::string& body = bodies()[i];
    CAPTURE(body);
    std::string id = "l-" + std::to_string(i);
    std::string add = "{\"cmd\":\"add\",\"topic\":\"held\",\"id\":\"" + id + "\",\"body\": ";
    add += body;
    add += " ,\"fix_time\":\"2030-01-01 00:00:00\"}";
    socket.send_raw(legacy_frame(add));
    REQUIRE(socket.read_reply()["code"] == 1);
    socket.send_raw(legacy_frame("{\"cmd\":\"get\",\"topic\":\"held\",\"id\":\"" + id + "\"}"));
    check_legacy_data(socket.read_frame(), body);
    auto got = http.get(jobs_url("held") + "/" + id);
    REQUIRE(got.status == 200);
    check_reply_carries(got.body, "body", body);
  }
  // And the other way: added over HTTP, read over the legacy port.
  socket.send_raw(legacy_frame(R"({"cmd":"get","topic":"held","id":"h-0"})"));
  check_legacy_data(socket.read_frame(), bodies()[0]);
}

TEST_CASE("the callback receives the body byte for byte (POST body and GET parameter)") {
  dq::test::HttpClient http;
  for (size_t i = 0; i < bodies().size(); ++i) {
    std::string id = "c-" + std::to_string(i);
    std::string post = "{\"id\":\"" + id + "\",\"body\":" + bodies()[i] + ",\"delay\":0}";
    REQUIRE(http.post(jobs_url("hooked"), post).status == 201);
    REQUIRE(http.post(jobs_url("hooked_get"), post).status == 201);
  }
  size_t expected = 2 * bodies().size();
  REQUIRE(env().callback.wait_for(expected, 10000));
  size_t checked = 0;
  for (const auto& request : env().callback.requests()) {
    std::string id = request.header("x-dq-id");
    REQUIRE(id.rfind("c-", 0) == 0);
    const std::string& body = bodies().at(std::stoul(id.substr(2)));
    CAPTURE(body);
    if (request.path == "/post") {
      check_reply_carries(request.body, "body", body);
    } else {
      CHECK(request.path == "/get");
      CHECK(request.param("body") == body);
    }
    ++checked;
  }
  CHECK(checked == expected);
}

TEST_CASE("dead letters are listed with their bodies byte for byte") {
  // "parked" is offline, so dqd's consumer leaves its jobs to this test.
  dq::test::HttpClient http;
  dq::JobStore store({env().shared.redis.shard()}, 1000, 1000);
  for (size_t i = 0; i < bodies().size(); ++i) {
    std::string post = "{\"id\":\"d-" + std::to_string(i) + "\",\"body\":" + bodies()[i] + "}";
    REQUIRE(http.post(jobs_url("parked"), post).status == 201);
  }
  REQUIRE(store.promote(0, 100).is_ok());
  auto reserved = store.reserve(0, "r-parked", {{"parked", 60000, 100, 100, 1}}, 100, 64 << 20);
  REQUIRE(reserved.is_ok());
  REQUIRE(reserved->jobs.size() == bodies().size());
  for (const auto& job : reserved->jobs) {
    CHECK(job.job.body == bodies().at(std::stoul(job.job.id.substr(2))));  // as stored
    REQUIRE(*store.fail(0, "parked", job.job.id, job.lease, 1000, 1, "HTTP 500") ==
            dq::FailOutcome::kDead);
  }
  auto listed = http.get(env().shared.dqd->base_url() + "/v1/topics/parked/dead");
  REQUIRE(listed.status == 200);
  for (const auto& body : bodies()) {
    CAPTURE(body);
    CHECK(contains(listed.body, "\"body\":" + body));
  }
  Json parsed = Json::parse(listed.body, nullptr, false);
  REQUIRE(parsed.is_object());
  CHECK(parsed["total"] == bodies().size());
  REQUIRE(parsed["jobs"].size() == bodies().size());
  for (const auto& job : parsed["jobs"]) {
    CHECK(job["state"] == "dead");
    std::string id = job["id"].get<std::string>();
    CHECK(job["body"] == Json::parse(bodies().at(std::stoul(id.substr(2)))));
  }
}

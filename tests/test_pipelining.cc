// Pipelined requests against a real dqd: every request sent behind another on
// one connection, in one write, is answered once, in order, on every route
// family (health, metrics, adds, batches, gets, deletes, listings, the
// route-level errors and, last, one the HTTP layer refuses), whether the one
// before it was answered at once (a health check, a refusal) or after Redis.
// The same for the legacy protocol's frames. Every job is counted: each add
// stored once, answered once and delivered once.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "server/legacy_frame.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/raw_http.h"
#include "tests/support/redis_server.h"

using dq::Json;
using dq::test::CallbackServer;
using dq::test::DqdProcess;
using dq::test::RawAnswer;
using dq::test::RawHttp;
using dq::test::TestRedis;

namespace {

constexpr const char* kTopic = "pipe";

std::string get_request(const std::string& target, const std::string& extra_headers = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: dq\r\n" + extra_headers + "\r\n";
}

std::string jobs_path(const std::string& topic = kTopic) { return "/v1/topics/" + topic + "/jobs"; }

std::string add_of(const std::string& id, double delay_s, const std::string& topic = kTopic) {
  return dq::test::add_request(topic, dq::test::job_doc(id, Json{{"id", id}}, delay_s));
}

std::string batch_of(const std::vector<std::string>& ids, double delay_s) {
  Json jobs = Json::array();
  for (const auto& id : ids) {
    jobs.push_back(Json{{"id", id}, {"body", Json{{"id", id}}}, {"delay", delay_s}});
  }
  std::string body = Json{{"jobs", jobs}}.dump();
  return "POST " + jobs_path() +
         "/batch HTTP/1.1\r\nHost: dq\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string delete_of(const std::string& id) {
  return "DELETE " + jobs_path() + "/" + id + " HTTP/1.1\r\nHost: dq\r\n\r\n";
}

// One dqd (one API worker, a timer and a consumer) on a real Redis, a topic
// whose callbacks a real receiver counts, and at most 3 jobs per batch.
struct PipeWorld {
  PipeWorld() {
    auto options = dq::test::one_timer_one_consumer(
        {redis.address()}, "[server]\nmax_batch_jobs = 3\nmax_request_bytes = 70000\n");
    dqd = std::make_unique<DqdProcess>(options);
    dq::test::register_topic(*dqd, kTopic, callback.url());
    dqd->start();
  }

  // Sends `requests` in one write; returns the answers that came in `wanted`
  // (waits for one more for a while, to see there is none).
  std::vector<RawAnswer> pipelined(const std::string& requests, size_t wanted) {
    RawHttp raw(dqd->http_port());
    REQUIRE(raw.send_text(requests));
    raw.read_answers(wanted + 1, wanted == 0 ? 500 : 10000);
    return dq::test::split_answers(raw.read_answers(wanted + 1, 300));
  }

  int http_status_of_job(const std::string& id) {
    return dq::test::HttpClient().get(dqd->jobs_url(kTopic) + "/" + id).status;
  }

  // Waits until every id of `delivered` was called back, then a little
  // longer; checks each was called back exactly once and nothing else was.
  void check_deliveries(const std::vector<std::string>& delivered) {
    CHECK(callback.wait_for(delivered.size(), 15000));
    dq::test::sleep_ms(700);
    std::map<std::string, int> by_id = dq::test::deliveries_by_id(callback);
    for (const auto& id : delivered) {
      CAPTURE(id);
      CHECK(by_id[id] == 1);  // delivered, and not twice
    }
    CHECK(by_id.size() == delivered.size());  // nothing deleted or refused was delivered
  }

  TestRedis redis;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
};

// "200 201 404 ..." (a string, so a failed check shows it).
std::string statuses(const std::vector<RawAnswer>& answers) {
  std::string out;
  for (const auto& answer : answers)
    out += (out.empty() ? "" : " ") + std::to_string(answer.status);
  return out;
}

std::string statuses(const std::vector<int>& list) {
  std::string out;
  for (int status : list) out += (out.empty() ? "" : " ") + std::to_string(status);
  return out;
}

}  // namespace

TEST_CASE("ten pipelined health checks in one write get ten answers") {
  PipeWorld world;
  std::string requests;
  for (int i = 0; i < 10; ++i) requests += get_request("/healthz");
  auto answers = world.pipelined(requests, 10);
  CHECK(statuses(answers) == statuses(std::vector<int>(10, 200)));
  for (const auto& answer : answers) CHECK(answer.json()["status"] == "ok");
}

TEST_CASE("a health check then an add in one write: both answered, the add stored once") {
  PipeWorld world;
  auto answers = world.pipelined(get_request("/healthz") + add_of("after-health", 0.2), 2);
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].status == 200);
  CHECK(answers[1].status == 201);
  CHECK(answers[1].json()["id"] == "after-health");
  world.check_deliveries({"after-health"});
}

TEST_CASE("every route family pipelined in one write is answered once, in order") {
  PipeWorld world;
  // Answered at once and after Redis, mixed; the last request breaks the
  // HTTP layer's body limit, so its 413 is the last answer and the
  // connection closes after it.
  struct Step {
    std::string request;
    int status;
  };
  std::string big = dq::test::job_doc("too-big", std::string(80000, 'x'), 0);
  const std::vector<Step> steps = {
      {get_request("/healthz"), 200},
      {get_request("/metrics"), 200},
      {add_of("a1", 0.3), 201},
      {get_request("/healthz"), 200},
      {add_of("a1", 0.3), 200},  // the same add again: "existing", stored once
      {batch_of({"b1", "b2"}, 0.3), 200},
      {get_request(jobs_path() + "/a1"), 200},
      {add_of("gone", 600), 201},
      {delete_of("gone"), 204},
      {get_request(jobs_path() + "/gone"), 404},
      {get_request("/no/such/route"), 404},
      {add_of("x", 0, "no-such-topic"), 404},
      {dq::test::add_request(kTopic, "{not json"), 400},
      {dq::test::add_request(kTopic, R"({"id":"bad\u0001id","body":1})"), 400},
      {"PUT /healthz HTTP/1.1\r\nHost: dq\r\nContent-Length: 0\r\n\r\n", 405},
      {batch_of({"c1", "c2", "c3", "c4"}, 0.3), 413},  // over max_batch_jobs: nothing added
      {get_request("/v1/topics"), 200},
      {get_request(jobs_path() + "?state=delayed"), 200},
      {get_request(jobs_path()), 400},  // a listing needs its state
      {get_request("/v1/topics/" + std::string(kTopic) + "/stats"), 200},
      {get_request("/v1/signing-keys"), 200},
      {add_of("last", 0.3), 201},
      {dq::test::add_request(kTopic, big), 413},  // over max_request_bytes: then closed
      {add_of("never-read", 0), 0},               // after the 413: not read at all
  };
  std::string requests;
  for (const auto& step : steps) requests += step.request;
  RawHttp raw(world.dqd->http_port());
  REQUIRE(raw.send_text(requests));
  std::string stream = raw.read_until_closed(20000);
  auto answers = dq::test::split_answers(stream);
  std::vector<int> expected;
  for (const auto& step : steps) {
    if (step.status != 0) expected.push_back(step.status);
  }
  CAPTURE(stream.substr(0, 4000));
  CHECK(statuses(answers) == statuses(expected));
  REQUIRE(answers.size() == expected.size());
  CHECK(answers[2].json()["id"] == "a1");
  CHECK(answers[4].json()["existing"] == true);
  CHECK(answers[5].json()["results"].size() == 2);
  CHECK(answers[6].json()["body"] == Json{{"id", "a1"}});
  CHECK(answers[21].json()["id"] == "last");
  CHECK(answers.back().json()["error"].get<std::string>().find("max_request_bytes") !=
        std::string::npos);
  CHECK(raw.closed_by_server(1000));

  // The jobs: each accepted one stored once and delivered once; the deleted,
  // refused and unread ones never.
  for (const char* refused : {"gone", "c1", "never-read", "too-big"}) {
    CAPTURE(refused);
    CHECK(world.http_status_of_job(refused) == 404);
  }
  world.check_deliveries({"a1", "b1", "b2", "last"});
}

TEST_CASE("adds behind refusals answered at once are each answered, in order") {
  PipeWorld world;
  std::string requests;
  std::vector<int> expected;
  for (int i = 0; i < 20; ++i) {
    std::string id = "r" + std::to_string(i);
    if (i % 2 == 0) {
      requests += dq::test::add_request(kTopic, "{}");  // 400 at once
      expected.push_back(400);
    }
    requests += add_of(id, 0.2);
    expected.push_back(201);
  }
  auto answers = world.pipelined(requests, expected.size());
  CHECK(statuses(answers) == statuses(expected));
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) ids.push_back("r" + std::to_string(i));
  world.check_deliveries(ids);
}

TEST_CASE("legacy frames pipelined in one write: refusals and adds each answered, in order") {
  PipeWorld world;
  dq::test::LegacySocket socket(world.dqd->legacy_port());
  auto add = [](const std::string& id) {
    return dq::frame_legacy_json(
        Json{{"cmd", "add"}, {"topic", kTopic}, {"id", id}, {"body", Json{{"id", id}}}}.dump());
  };
  std::string bytes;
  for (int i = 0; i < 10; ++i) bytes += dq::frame_legacy_json(Json{{"cmd", "nonsense"}}.dump());
  bytes += add("L1");
  bytes += dq::frame_legacy_json(Json{{"cmd", "get"}, {"topic", kTopic}, {"id", "L1"}}.dump());
  bytes += dq::frame_legacy_json(Json{{"cmd", "get"}, {"topic", "nope"}, {"id", "L1"}}.dump());
  bytes += add("L2");
  bytes += dq::frame_legacy_json(Json{{"cmd", "add"}, {"topic", kTopic}}.dump());  // no id
  bytes += add("L3");
  socket.send_raw(bytes);
  for (int i = 0; i < 10; ++i) CHECK(socket.read_reply()["code"] == 0);
  CHECK(socket.read_reply()["code"] == 1);  // add L1
  Json got = socket.read_reply();           // get L1: the body, with PHP's fields
  CHECK(got["code"] == 1);
  CHECK(got["data"]["id"] == "L1");
  CHECK(socket.read_reply()["msg"].get<std::string>().find("unknown topic") != std::string::npos);
  CHECK(socket.read_reply()["code"] == 1);  // add L2
  CHECK(socket.read_reply()["code"] == 0);  // no id
  CHECK(socket.read_reply()["code"] == 1);  // add L3
  CHECK(socket.read_frame(500).empty());    // nothing more
  world.check_deliveries({"L1", "L2", "L3"});
}

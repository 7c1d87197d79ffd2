// The HTTP API's limits (server/http_server.h): too many connections, an
// oversized head or body, a malformed request, a batch over max_batch_jobs
// and clients too slow to send a request are all answered with JSON (or the
// connection is closed), and nothing is written to Redis.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/core/json.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/raw_http.h"
#include "tests/support/redis_server.h"

using dq::Json;
using dq::test::body_of;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::HttpClient;
using dq::test::RawHttp;
using dq::test::status_of;
using dq::test::TestRedis;

namespace {

std::string add_request(const std::string& body, const std::string& extra_headers = "") {
  return dq::test::add_request("limits", body, extra_headers);
}

struct LimitedDqd {
  explicit LimitedDqd(const std::string& server_ini) {
    DqdOptions options;
    options.shards = {redis.address()};
    options.extra_ini = "[server]\n" + server_ini;
    dqd = std::make_unique<DqdProcess>(options);
    dq::test::register_topic(*dqd, "limits", "http://127.0.0.1:9/none");
    dqd->start();
    before = redis.dump_all();
  }
  TestRedis redis;
  std::unique_ptr<DqdProcess> dqd;
  std::string before;
};

}  // namespace

TEST_CASE("a 16 MB batch gets a JSON 413 (default limits), and nothing is written") {
  LimitedDqd world("");
  Json jobs = Json::array();
  std::string body(4000, 'x');
  for (int i = 0; i < 4200; ++i) {
    jobs.push_back(Json{{"id", "b" + std::to_string(i)}, {"body", body}});
  }
  std::string batch = Json{{"jobs", jobs}}.dump();
  REQUIRE(batch.size() > 16u * 1024 * 1024);
  HttpClient http;
  auto answer = http.request("POST", world.dqd->jobs_url("limits") + "/batch", batch, 20000);
  CHECK(answer.status == 413);
  CHECK(answer.content_type.find("application/json") != std::string::npos);
  CHECK(answer.json()["error"].get<std::string>().find("max_request_bytes") != std::string::npos);
  CHECK(world.redis.dump_all() == world.before);
}

TEST_CASE("a body over max_request_bytes sent at once gets a JSON 413 too") {
  LimitedDqd world("max_request_bytes = 70000\n");
  RawHttp raw(world.dqd->http_port());
  std::string body = Json{{"id", "big"}, {"body", std::string(80000, 'y')}}.dump();
  raw.send_text(add_request(body));
  std::string answer = raw.read_answer();
  CAPTURE(answer.substr(0, 300));
  CHECK(status_of(answer) == 413);
  CHECK(answer.find("Content-Type: application/json") != std::string::npos);
  CHECK(body_of(answer)["error"].get<std::string>().find("70000") != std::string::npos);
  CHECK(world.redis.dump_all() == world.before);
}

TEST_CASE("a head over max_header_bytes and a malformed request get JSON errors") {
  LimitedDqd world("max_header_bytes = 4096\n");
  {
    RawHttp raw(world.dqd->http_port());
    std::string body = Json{{"id", "h1"}, {"body", 1}}.dump();
    raw.send_text(add_request(body, "X-Padding: " + std::string(6000, 'p') + "\r\n"));
    std::string answer = raw.read_answer();
    CAPTURE(answer.substr(0, 300));
    CHECK(status_of(answer) == 431);
    CHECK(body_of(answer)["error"].get<std::string>().find("max_header_bytes") !=
          std::string::npos);
  }
  {
    RawHttp raw(world.dqd->http_port());
    raw.send_text("NOT HTTP AT ALL\r\n\r\n");
    std::string answer = raw.read_answer();
    CAPTURE(answer);
    CHECK(status_of(answer) == 400);
    CHECK(body_of(answer).contains("error"));
  }
  // The server still answers afterwards.
  HttpClient http;
  CHECK(http.get(world.dqd->base_url() + "/healthz").status == 200);
  CHECK(world.redis.dump_all() == world.before);
}

TEST_CASE("at max_connections the connection idle the longest makes room; none idle: JSON 503") {
  LimitedDqd world("max_connections = 3\n");
  int port = world.dqd->http_port();
  const std::string health = "GET /healthz HTTP/1.1\r\nHost: dq\r\n\r\n";
  // Three answered, idle connections: a fourth is served, and the first (idle
  // the longest) is closed for it.
  std::vector<std::unique_ptr<RawHttp>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(std::make_unique<RawHttp>(port));
    open.back()->send_text(health);
    CHECK(status_of(open.back()->read_answer()) == 200);
  }
  CHECK(open[0]->closed_by_server(3000));
  CHECK_FALSE(open[1]->closed_by_server(300));
  CHECK_FALSE(open[2]->closed_by_server(1));
  open.clear();

  // Three connections each in the middle of a request: none is idle, so one
  // more gets 503 and is closed. (A busy one the server had not read yet
  // looked idle and may have made room: it is opened again.)
  std::vector<std::unique_ptr<RawHttp>> busy(3);
  bool refused = dq::test::wait_until(10000, [&] {
    for (auto& connection : busy) {
      if (!connection || connection->closed_by_server(1)) {
        connection = std::make_unique<RawHttp>(port);
        connection->send_text("GET /healthz HTTP/1.1\r\nHost: dq\r\n");  // never finished
      }
    }
    RawHttp extra(port);
    extra.send_text(health);
    std::string answer = extra.read_answer();
    if (status_of(answer) != 503) {
      return false;
    }
    CHECK(body_of(answer)["error"].get<std::string>().find("max_connections") != std::string::npos);
    CHECK(extra.closed_by_server(3000));
    return true;
  });
  CHECK(refused);
  busy.clear();  // once they are closed, new connections are served again
  CHECK(dq::test::wait_until(3000, [&] {
    return dq::test::http_request("GET", world.dqd->base_url() + "/healthz").status == 200;
  }));
  CHECK(world.redis.dump_all() == world.before);
}

TEST_CASE("a client sending a byte at a time, or nothing, cannot hold a connection") {
  LimitedDqd world("request_timeout_ms = 1000\nidle_timeout_ms = 1500\n");
  std::string request = add_request(Json{{"id", "slow"}, {"body", 1}}.dump());
  RawHttp slow(world.dqd->http_port());
  auto started = std::chrono::steady_clock::now();
  bool sent_all = true;
  for (char byte : request) {  // the whole request would take 200 ms x ~120 bytes = 24 s
    if (!slow.send_text(std::string(1, byte)) || slow.closed_by_server(200)) {
      sent_all = false;
      break;
    }
  }
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - started)
                  .count();
  MESSAGE("a byte every 200 ms: closed after ", took, " ms");
  CHECK_FALSE(sent_all);
  RawHttp silent(world.dqd->http_port());
  CHECK(silent.closed_by_server(6000));
  CHECK(world.redis.dump_all() == world.before);
}

TEST_CASE("a batch over max_batch_jobs gets a JSON 413 and adds nothing") {
  LimitedDqd world("max_batch_jobs = 5\n");
  Json jobs = Json::array();
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(Json{{"id", "j" + std::to_string(i)}, {"body", i}});
  }
  HttpClient http;
  auto answer = http.post(world.dqd->jobs_url("limits") + "/batch", Json{{"jobs", jobs}}.dump());
  CHECK(answer.status == 413);
  // The 413 names the key that limits it.
  CHECK(answer.json()["error"].get<std::string>().find("limit of 5 ([server] max_batch_jobs)") !=
        std::string::npos);
  CHECK(world.redis.dump_all() == world.before);
}

TEST_CASE("pipelined, chunked, 100-continue and HTTP/1.0 requests on dq's HTTP server") {
  LimitedDqd world("");
  {
    // Three requests in one write, answered in order; the last asks to close.
    RawHttp raw(world.dqd->http_port());
    std::string chunked =
        "POST /v1/topics/limits/jobs HTTP/1.1\r\nHost: dq\r\nTransfer-Encoding: chunked\r\n\r\n"
        "8\r\n{\"id\":\"c\r\nd\r\n2\",\"body\":{}}\r\n0\r\n\r\n";
    raw.send_text(add_request(Json{{"id", "p1"}, {"body", 1}}.dump()) + chunked +
                  "GET /v1/topics/limits/jobs/p1 HTTP/1.1\r\nConnection: close\r\n\r\n");
    std::string answers = raw.read_until_closed();
    CAPTURE(answers);
    size_t first = answers.find("HTTP/1.1 201");
    size_t second = answers.find("HTTP/1.1 201", first + 1);
    size_t third = answers.find("HTTP/1.1 200", second + 1);
    CHECK(first == 0);
    CHECK(second != std::string::npos);
    CHECK(third != std::string::npos);
    CHECK(answers.find("\"id\":\"c2\"", second) < third);
    CHECK(answers.find("Connection: close", third) != std::string::npos);
  }
  {
    // A client that waits for 100 Continue before its body.
    RawHttp raw(world.dqd->http_port());
    std::string body = Json{{"id", "e1"}, {"body", std::string(2000, 'e')}}.dump();
    raw.send_text(
        "POST /v1/topics/limits/jobs HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n");
    CHECK(raw.read_answer().rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
    raw.send_text(body);
    std::string answer = raw.read_until_closed(1500);
    CHECK(answer.find("HTTP/1.1 201") != std::string::npos);
  }
  {
    // HTTP/1.0 closes after its answer.
    RawHttp raw(world.dqd->http_port());
    raw.send_text("GET /healthz HTTP/1.0\r\n\r\n");
    std::string answer = raw.read_until_closed();
    CHECK(status_of(answer) == 200);
    CHECK(answer.find("Connection: close") != std::string::npos);
    CHECK(body_of(answer)["status"] == "ok");
  }
  {
    // Answers larger than the socket takes at once (a client with a small
    // receive buffer that does not read for a while; ~4.8 MB, over what a
    // loopback socket's send buffer grows to): the server sends what fits and
    // the rest when the socket drains, every byte in order.
    std::string big(60000, 'b');
    RawHttp add(world.dqd->http_port());
    add.send_text(add_request(Json{{"id", "big"}, {"body", big}}.dump(), "Connection: close\r\n"));
    REQUIRE(status_of(add.read_until_closed()) == 201);
    RawHttp slow(world.dqd->http_port(), 4096);
    std::string get = "GET /v1/topics/limits/jobs/big HTTP/1.1\r\n\r\n";
    std::string gets;
    const size_t kGets = 80;
    for (size_t i = 0; i + 1 < kGets; ++i) {
      gets += get;
    }
    slow.send_text(gets + "GET /v1/topics/limits/jobs/big HTTP/1.1\r\nConnection: close\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::string answers = slow.read_until_closed();
    size_t count = 0;
    for (size_t at = answers.find("HTTP/1.1 200"); at != std::string::npos;
         at = answers.find("HTTP/1.1 200", at + 1)) {
      size_t head_end = answers.find("\r\n\r\n", at);
      REQUIRE(head_end != std::string::npos);
      size_t length_at = answers.find("Content-Length: ", at);
      size_t length = std::stoul(answers.substr(length_at + 16));
      Json job = Json::parse(answers.substr(head_end + 4, length), nullptr, false);
      CHECK(job["body"] == big);
      ++count;
      at = head_end + 4 + length - 1;
    }
    CHECK(count == kGets);
  }
  {
    // Over 64 KiB of pipelined requests behind one that waits for Redis:
    // reading pauses and resumes, and every request is answered in order.
    RawHttp raw(world.dqd->http_port());
    std::string pad(300, 'p');
    std::string requests;
    const int kRequests = 400;  // ~130 KB
    for (int i = 0; i < kRequests; ++i) {
      requests += "GET /v1/topics/limits/jobs/p1 HTTP/1.1\r\nX-Pad: " + pad +
                  (i + 1 == kRequests ? "\r\nConnection: close" : "") + "\r\n\r\n";
    }
    raw.send_text(requests);
    std::string answers = raw.read_until_closed(20000);
    size_t count = 0;
    for (size_t at = answers.find("HTTP/1.1 200"); at != std::string::npos;
         at = answers.find("HTTP/1.1 200", at + 1)) {
      ++count;
    }
    CHECK(count == kRequests);
    CHECK(answers.find("HTTP/1.1 4") == std::string::npos);
  }
  // Request log lines carry the API server's own pid (read once per process,
  // and again after the master's fork), and a stopped server leaves every
  // line in the file (dq-server writes the log every 100 ms, and at exit).
  std::vector<pid_t> servers = dq::test::children_titled(world.dqd->pid(), "dq-server_");
  REQUIRE(servers.size() == 1);
  REQUIRE(world.dqd->stop() == 0);
  std::string marker = "[dq-server_0 " + std::to_string(servers[0]) + "] ";
  size_t gets_of_p1 = 0;
  for (const auto& entry : std::filesystem::directory_iterator(world.dqd->log_dir())) {
    if (entry.path().filename().string().rfind("request_", 0) != 0) {
      continue;
    }
    std::ifstream file(entry.path());
    for (std::string line; std::getline(file, line);) {
      CAPTURE(line);
      CHECK(line.find(marker) != std::string::npos);
      if (line.find(" info get limits p1 -> 200") != std::string::npos) {
        ++gets_of_p1;
      }
    }
  }
  CHECK(gets_of_p1 == 401);
}

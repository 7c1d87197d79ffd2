// server/http_parser.h on its own: requests split at every byte boundary,
// pipelined requests, chunked bodies, 100-continue, keep-alive rules, limits
// and malformed input. Pure: no sockets, no timing.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/http_parser.h"

using dq::HttpLimits;
using dq::HttpParse;
using dq::HttpParser;
using dq::HttpRequestHead;

namespace {

struct Parsed {
  HttpRequestHead head;
  std::string body;
};

// Feeds `bytes` to a parser in pieces of `step` bytes (a connection's reads)
// and collects every whole request; *error_status is set on an error.
std::vector<Parsed> parse_all(const std::string& bytes, size_t step, int* error_status = nullptr,
                              HttpLimits limits = HttpLimits()) {
  HttpParser parser(limits);
  std::string buffer;  // received, not yet consumed
  std::vector<Parsed> out;
  for (size_t at = 0; at < bytes.size(); at += step) {
    buffer.append(bytes, at, step);
    for (;;) {
      HttpParse result = parser.parse(buffer);
      if (result == HttpParse::kNeedMore) {
        break;
      }
      if (result == HttpParse::kError) {
        if (error_status != nullptr) {
          *error_status = parser.error_status();
        }
        return out;
      }
      out.push_back({parser.head(), parser.body()});
      buffer.erase(0, parser.consumed());
      parser.reset();
      if (buffer.empty()) {
        break;
      }
    }
  }
  return out;
}

int error_of(const std::string& bytes, HttpLimits limits = HttpLimits()) {
  int status = 0;
  auto parsed = parse_all(bytes, bytes.size(), &status, limits);
  return status;
}

const std::string kPipelined =
    "POST /v1/topics/a/jobs HTTP/1.1\r\nHost: dq\r\nContent-Type: application/json\r\n"
    "Content-Length: 11\r\n\r\n{\"id\":\"x\"}\n"
    "GET /v1/topics/a/jobs/x?y=1 HTTP/1.1\r\nhost: dq\r\nAuthorization: Bearer t0k\r\n\r\n"
    "POST /v1/topics/a/jobs/batch HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    "4\r\n{\"jo\r\n9;ext=1\r\nbs\":[]}\r\n\r\n0\r\nX-Trailer: 1\r\n\r\n"
    "DELETE /v1/topics/a/jobs/x HTTP/1.0\r\n\r\n";

}  // namespace

TEST_CASE("pipelined requests parse the same whatever the split of reads") {
  for (size_t step = 1; step <= kPipelined.size(); ++step) {
    CAPTURE(step);
    int error = 0;
    auto requests = parse_all(kPipelined, step, &error);
    REQUIRE(error == 0);
    REQUIRE(requests.size() == 4);
    CHECK(requests[0].head.method == "POST");
    CHECK(requests[0].head.target == "/v1/topics/a/jobs");
    CHECK(requests[0].head.content_type == "application/json");
    CHECK(requests[0].head.host == "dq");
    CHECK(requests[0].body == "{\"id\":\"x\"}\n");
    CHECK(requests[0].head.keep_alive);
    CHECK(requests[1].head.method == "GET");
    CHECK(requests[1].head.target == "/v1/topics/a/jobs/x?y=1");
    CHECK(requests[1].head.authorization == "Bearer t0k");
    CHECK(requests[1].body.empty());
    CHECK(requests[2].head.chunked);
    CHECK(requests[2].body == "{\"jobs\":[]}\r\n");
    CHECK(requests[3].head.method == "DELETE");
    CHECK(requests[3].head.minor_version == 0);
    CHECK_FALSE(requests[3].head.keep_alive);  // HTTP/1.0 closes by default
  }
}

TEST_CASE("keep-alive follows the version and the Connection header") {
  auto one = [](const std::string& head) {
    auto parsed = parse_all(head + "\r\n", 1000);
    REQUIRE(parsed.size() == 1);
    return parsed[0].head.keep_alive;
  };
  CHECK(one("GET / HTTP/1.1\r\n"));
  CHECK_FALSE(one("GET / HTTP/1.1\r\nConnection: close\r\n"));
  CHECK_FALSE(one("GET / HTTP/1.1\r\nConnection: TE, Close\r\n"));
  CHECK_FALSE(one("GET / HTTP/1.0\r\n"));
  CHECK(one("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n"));
}

TEST_CASE("Expect: 100-continue is seen once the head is whole, before the body") {
  HttpParser parser{HttpLimits()};
  std::string bytes =
      "POST /v1/topics/a/jobs HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
  CHECK(parser.parse(bytes) == HttpParse::kNeedMore);
  CHECK(parser.head_done());
  CHECK(parser.head().expect_continue);
  bytes += "hello";
  REQUIRE(parser.parse(bytes) == HttpParse::kRequest);
  CHECK(parser.body() == "hello");
  // HTTP/1.0 has no 100 Continue.
  HttpParser old{HttpLimits()};
  CHECK(old.parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n") ==
        HttpParse::kNeedMore);
  CHECK_FALSE(old.head().expect_continue);
}

TEST_CASE("blank lines before a request are skipped and do not start it") {
  HttpParser parser{HttpLimits()};
  CHECK(parser.parse("\r\n\r\n") == HttpParse::kNeedMore);
  CHECK_FALSE(parser.started());
  CHECK(parser.parse("\r\n\r\nGE") == HttpParse::kNeedMore);
  CHECK(parser.started());
  REQUIRE(parser.parse("\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n") == HttpParse::kRequest);
  CHECK(parser.head().target == "/healthz");
}

TEST_CASE("limits: a head over max_head_bytes is 431, a body over max_body_bytes 413") {
  HttpLimits limits;
  limits.max_head_bytes = 200;
  limits.max_body_bytes = 100;
  CHECK(error_of("GET / HTTP/1.1\r\nX: " + std::string(300, 'a') + "\r\n\r\n", limits) == 431);
  CHECK(error_of("GET / HTTP/1.1\r\nX: " + std::string(300, 'a'), limits) == 431);  // unfinished
  CHECK(error_of("GET /" + std::string(300, 'a'), limits) == 431);
  // Refused from the Content-Length alone, before any of the body arrives.
  CHECK(error_of("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", limits) == 413);
  CHECK(error_of("POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'b'),
                 limits) == 0);
  std::string chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  CHECK(error_of(chunked + "32\r\n" + std::string(50, 'c') + "\r\n33\r\n", limits) == 413);
  CHECK(error_of(chunked + "32\r\n" + std::string(50, 'c') + "\r\n32\r\n" + std::string(50, 'c') +
                     "\r\n0\r\n\r\n",
                 limits) == 0);
}

TEST_CASE("malformed requests are errors with a status") {
  CHECK(error_of("NOT HTTP AT ALL\r\n\r\n") == 400);
  CHECK(error_of("GET /\r\n\r\n") == 400);
  CHECK(error_of("GET / HTTP/1.1 x\r\n\r\n") == 400);
  CHECK(error_of("G(T / HTTP/1.1\r\n\r\n") == 400);
  CHECK(error_of("GET / HTTP/2.0\r\n\r\n") == 505);
  CHECK(error_of("GET / HTTP/1.1\r\nNo colon here\r\n\r\n") == 400);
  CHECK(error_of("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n") == 400);
  CHECK(error_of("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n") == 400);
  CHECK(error_of("GET / HTTP/1.1\r\nX: a\x01\r\n\r\n") == 400);
  CHECK(error_of("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n") == 400);
  CHECK(error_of("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") == 400);
  CHECK(error_of("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n") == 400);
  CHECK(error_of("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n") == 501);
  CHECK(error_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n") ==
        400);
  CHECK(error_of("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n") == 400);
  std::string chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  CHECK(error_of(chunked + "zz\r\n") == 400);
  CHECK(error_of(chunked + "3\r\nabcX") == 400);
  CHECK(error_of(chunked + "fffffffffffffffffff\r\n") == 400);
}

TEST_CASE("regression (fuzz): a trailer line over the head limit is 431 whole or in pieces") {
  HttpLimits limits;
  limits.max_head_bytes = 100;
  std::string request = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nT: " +
                        std::string(200, 'x') + "\r\n\r\n";
  int whole = 0;
  int bytewise = 0;
  CHECK(parse_all(request, request.size(), &whole, limits).empty());
  CHECK(parse_all(request, 1, &bytewise, limits).empty());
  CHECK(whole == 431);
  CHECK(bytewise == 431);
}

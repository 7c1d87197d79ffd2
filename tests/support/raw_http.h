// RawHttp: a raw TCP connection to dqd's HTTP port, for tests that send
// exactly the bytes they want (pipelined requests in one write, malformed
// heads, a byte at a time) and read the answers as they come.
#pragma once

#include <string>
#include <vector>

#include "common/core/json.h"

namespace dq::test {

class RawHttp {
 public:
  // receive_buffer > 0: SO_RCVBUF before connecting (a client that takes little at a time).
  explicit RawHttp(int port, int receive_buffer = 0);
  ~RawHttp();
  RawHttp(const RawHttp&) = delete;
  RawHttp& operator=(const RawHttp&) = delete;

  bool send_text(const std::string& bytes);

  // Everything the server sent until it closed, or until one whole answer
  // (head and Content-Length body) arrived, or timeout_ms passed.
  std::string read_answer(int timeout_ms = 5000);
  // Everything the server sent until it closed the connection (or timeout_ms).
  std::string read_until_closed(int timeout_ms = 5000);
  // Everything the server sent once `count` whole answers arrived (or it
  // closed, or timeout_ms passed).
  std::string read_answers(size_t count, int timeout_ms = 10000);
  // True once the server closed the connection (within timeout_ms).
  bool closed_by_server(int timeout_ms);

 private:
  // Reads what arrives within 50 ms into received_; false once closed.
  bool read_some();

  int fd_ = -1;
  std::string received_;
  bool closed_ = false;
};

// One HTTP answer of a stream of them.
struct RawAnswer {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
  Json json() const { return Json::parse(body, nullptr, false); }
};

// The whole answers (Content-Length bodies) at the start of `stream`, in
// order; an interim "100 Continue" counts as one.
std::vector<RawAnswer> split_answers(const std::string& stream);

// The status of the first answer in `answer` (0 when there is none).
int status_of(const std::string& answer);
// The JSON body of the first answer (discarded when it has none).
Json body_of(const std::string& answer);

// "POST /v1/topics/<topic>/jobs" with `body` and any extra header lines.
std::string add_request(const std::string& topic, const std::string& body,
                        const std::string& extra_headers = "");

}  // namespace dq::test

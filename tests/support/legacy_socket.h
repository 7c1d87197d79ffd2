// LegacySocket: a raw TCP client of dqd's legacy framed protocol (4 ASCII
// digits of length, then the JSON), for tests that speak it byte by byte.
#pragma once

#include <string>

#include "common/core/json.h"

namespace dq::test {

class LegacySocket {
 public:
  explicit LegacySocket(int port);  // connects to 127.0.0.1:port with TCP_NODELAY
  ~LegacySocket();
  LegacySocket(const LegacySocket&) = delete;
  LegacySocket& operator=(const LegacySocket&) = delete;

  void send_raw(const std::string& bytes);
  void shutdown_write();
  void send_json(const Json& request);  // dumps and frames it

  // The JSON text of the next reply frame; "" when none came within timeout_ms.
  std::string read_frame(int timeout_ms = 5000);
  // The next reply, parsed; a discarded Json when none came within timeout_ms.
  Json read_reply(int timeout_ms = 5000);
  Json call(const Json& request);  // send_json, then read_reply

  // True when the server closed the connection within timeout_ms.
  bool closed_by_server(int timeout_ms = 3000);

 private:
  // Reads what arrives before the deadline into buffer_; false on EOF or timeout.
  bool fill(int64_t deadline);

  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

}  // namespace dq::test

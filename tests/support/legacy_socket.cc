// Implements tests/support/legacy_socket.h.
#include "tests/support/legacy_socket.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "common/core/clock.h"

namespace dq::test {

LegacySocket::LegacySocket(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd_ >= 0);
  int on = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // so 1-byte writes go one by one
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
}

LegacySocket::~LegacySocket() { close(fd_); }

void LegacySocket::send_raw(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    REQUIRE(n > 0);
    sent += static_cast<size_t>(n);
  }
}

void LegacySocket::shutdown_write() { shutdown(fd_, SHUT_WR); }

void LegacySocket::send_json(const Json& request) {
  // Framed here rather than with server/legacy_frame.h: the harness links no role code.
  std::string json = request.dump();
  char header[16];
  std::snprintf(header, sizeof header, "%04zu", json.size());
  send_raw(header + json);
}

std::string LegacySocket::read_frame(int timeout_ms) {
  int64_t deadline = monotonic_ms() + timeout_ms;
  for (;;) {
    if (buffer_.size() >= 4) {
      size_t length = std::stoul(buffer_.substr(0, 4));
      if (buffer_.size() >= 4 + length) {
        std::string json = buffer_.substr(4, length);
        buffer_.erase(0, 4 + length);
        return json;
      }
    }
    if (!fill(deadline)) {
      return {};
    }
  }
}

Json LegacySocket::read_reply(int timeout_ms) {
  std::string json = read_frame(timeout_ms);
  if (json.empty()) {
    return Json::value_t::discarded;
  }
  return Json::parse(json, nullptr, false);
}

Json LegacySocket::call(const Json& request) {
  send_json(request);
  return read_reply();
}

bool LegacySocket::closed_by_server(int timeout_ms) {
  int64_t deadline = monotonic_ms() + timeout_ms;
  while (monotonic_ms() < deadline) {
    if (!fill(deadline)) {
      return eof_;
    }
  }
  return eof_;
}

bool LegacySocket::fill(int64_t deadline) {
  if (eof_) {
    return false;
  }
  int left = static_cast<int>(deadline - monotonic_ms());
  if (left <= 0) {
    return false;
  }
  pollfd poller{fd_, POLLIN, 0};
  if (poll(&poller, 1, left) <= 0) {
    return false;
  }
  char chunk[4096];
  ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

}  // namespace dq::test

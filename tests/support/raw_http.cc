// RawHttp (see raw_http.h).
#include "tests/support/raw_http.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace dq::test {
namespace {

using Clock = std::chrono::steady_clock;

// The size of the whole answer at `at` in stream; 0 when it is not whole yet.
size_t answer_size(const std::string& stream, size_t at) {
  size_t head_end = stream.find("\r\n\r\n", at);
  if (head_end == std::string::npos) {
    return 0;
  }
  size_t length_at = stream.find("Content-Length: ", at);
  size_t length = 0;
  if (length_at != std::string::npos && length_at < head_end) {
    length = std::strtoul(stream.c_str() + length_at + 16, nullptr, 10);
  }
  size_t end = head_end + 4 + length;
  return stream.size() >= end ? end - at : 0;
}

}  // namespace

RawHttp::RawHttp(int port, int receive_buffer) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (receive_buffer > 0) {
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
}

RawHttp::~RawHttp() { close(fd_); }

bool RawHttp::send_text(const std::string& bytes) {
  return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(bytes.size());
}

bool RawHttp::read_some() {
  if (closed_) {
    return false;
  }
  pollfd ready{fd_, POLLIN, 0};
  if (poll(&ready, 1, 50) <= 0) {
    return true;
  }
  char chunk[4096];
  ssize_t got = recv(fd_, chunk, sizeof(chunk), 0);
  if (got <= 0) {
    closed_ = true;
    return false;
  }
  received_.append(chunk, static_cast<size_t>(got));
  return true;
}

std::string RawHttp::read_answer(int timeout_ms) { return read_answers(1, timeout_ms); }

std::string RawHttp::read_answers(size_t count, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline && split_answers(received_).size() < count && read_some()) {
  }
  return received_;
}

std::string RawHttp::read_until_closed(int timeout_ms) {
  closed_by_server(timeout_ms);
  return received_;
}

bool RawHttp::closed_by_server(int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!closed_ && Clock::now() < deadline) {
    read_some();
  }
  return closed_;
}

std::vector<RawAnswer> split_answers(const std::string& stream) {
  std::vector<RawAnswer> answers;
  size_t at = 0;
  while (at < stream.size()) {
    size_t size = answer_size(stream, at);
    if (size == 0) {
      break;
    }
    std::string text = stream.substr(at, size);
    size_t head_end = text.find("\r\n\r\n");
    RawAnswer answer;
    answer.status = status_of(text);
    answer.head = text.substr(0, head_end);
    answer.body = text.substr(head_end + 4);
    answers.push_back(std::move(answer));
    at += size;
  }
  return answers;
}

int status_of(const std::string& answer) {
  return answer.size() > 12 ? std::atoi(answer.c_str() + 9) : 0;
}

Json body_of(const std::string& answer) {
  size_t head_end = answer.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return Json();
  }
  return Json::parse(answer.substr(head_end + 4), nullptr, false);
}

std::string add_request(const std::string& topic, const std::string& body,
                        const std::string& extra_headers) {
  return "POST /v1/topics/" + topic +
         "/jobs HTTP/1.1\r\nHost: dq\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace dq::test

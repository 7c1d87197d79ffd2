// Implements the listening sockets (see listen.h).
#include "common/core/listen.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/core/clock.h"
#include "common/core/log.h"

namespace dq {

namespace {

constexpr int kInUseRetryMs = 50;

// One attempt over every address of host_port; *in_use when the last bind
// failed because the address is taken.
Result<int> try_listen(const std::string& host_port, bool* in_use) {
  *in_use = false;
  std::string host;
  int port = 0;
  if (!parse_host_port(host_port, &host, &port)) {
    return Status(Code::kInvalid, "not host:port");
  }
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  struct addrinfo* found = nullptr;
  std::string port_text = std::to_string(port);
  int rc = getaddrinfo(host.empty() || host == "*" ? nullptr : host.c_str(), port_text.c_str(),
                       &hints, &found);
  if (rc != 0) {
    return Status(Code::kInvalid, std::string("cannot resolve the host: ") + gai_strerror(rc));
  }
  std::string last_error = "no address";
  for (auto* info = found; info != nullptr; info = info->ai_next) {
    int fd = socket(info->ai_family, info->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    info->ai_protocol);
    if (fd < 0) {
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, info->ai_addr, info->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    *in_use = errno == EADDRINUSE;
    last_error = std::strerror(errno);
    last_error[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(last_error[0])));
    close(fd);
  }
  freeaddrinfo(found);
  return Status(Code::kUnavailable, last_error);
}

}  // namespace

Result<int> listen_on(const std::string& host_port, int wait_in_use_ms) {
  int64_t deadline = monotonic_ms() + wait_in_use_ms;
  bool warned = false;
  for (;;) {
    bool in_use = false;
    auto fd = try_listen(host_port, &in_use);
    if (fd.is_ok() || !in_use || monotonic_ms() >= deadline) {
      return fd;
    }
    if (!warned) {
      err_log().warn(
          "{} is in use; trying again for up to {} ms (children of a previous master "
          "may be releasing it)",
          host_port, wait_in_use_ms);
      warned = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kInUseRetryMs));
  }
}

void close_listen_sockets(ListenSockets* sockets) {
  if (sockets->http_fd >= 0) {
    close(sockets->http_fd);
  }
  if (sockets->legacy_fd >= 0) {
    close(sockets->legacy_fd);
  }
  if (sockets->admin_fd >= 0) {
    close(sockets->admin_fd);
  }
  sockets->http_fd = sockets->legacy_fd = sockets->admin_fd = -1;
}

}  // namespace dq

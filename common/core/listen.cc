// Implements the listening sockets (see listen.h).
#include "common/core/listen.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

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
    return Status(Code::kInvalid, "bad address " + host_port);
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
    return Status(Code::kInvalid, "cannot resolve " + host_port + ": " + gai_strerror(rc));
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
    close(fd);
  }
  freeaddrinfo(found);
  return Status(Code::kUnavailable, "cannot listen on " + host_port + ": " + last_error);
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

int listen_admin(const std::string& host_port) {
  if (host_port.empty()) {
    return -1;
  }
  auto admin = listen_on(host_port);
  if (admin.is_ok()) {
    return *admin;
  }
  err_log().error("the admin page is off: {}", admin.status().message());
  return -1;
}

Result<ListenSockets> open_listen_sockets(const Config& config, int wait_in_use_ms) {
  ListenSockets sockets;
  auto http = listen_on(config.server_listen, wait_in_use_ms);
  if (!http.is_ok()) {
    return http.status();
  }
  sockets.http_fd = *http;
  if (!config.legacy_listen.empty()) {
    auto legacy = listen_on(config.legacy_listen, wait_in_use_ms);
    if (!legacy.is_ok()) {
      close_listen_sockets(&sockets);
      return legacy.status();
    }
    sockets.legacy_fd = *legacy;
  }
  sockets.admin_fd = listen_admin(config.admin_listen);
  return sockets;
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

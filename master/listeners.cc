// Implements master/listeners.h.
#include "master/listeners.h"

#include <unistd.h>

namespace dq {
namespace {

struct Listener {
  const char* key;                     // as written in the file
  const std::string Config::*address;  // empty: off
  int ListenSockets::*fd;
};

constexpr Listener kListeners[] = {
    {"[server] listen", &Config::server_listen, &ListenSockets::http_fd},
    {"[server] legacy_listen", &Config::legacy_listen, &ListenSockets::legacy_fd},
    {"[admin] listen", &Config::admin_listen, &ListenSockets::admin_fd},
};

Result<int> open_one(const Config& config, const Listener& listener, int wait_in_use_ms) {
  const std::string& address = config.*listener.address;
  auto fd = listen_on(address, wait_in_use_ms);
  if (!fd.is_ok()) {
    return Status(fd.status().code(), std::string(listener.key) + " = " + address + " in " +
                                          config.path + ": " + fd.status().message());
  }
  return fd;
}

// Closes the descriptors of `opened` that `keep` does not share.
void close_new(const ListenSockets& opened, const ListenSockets& keep) {
  for (const Listener& listener : kListeners) {
    int fd = opened.*listener.fd;
    if (fd >= 0 && fd != keep.*listener.fd) {
      close(fd);
    }
  }
}

}  // namespace

Result<ListenSockets> open_listeners(const Config& config, int wait_in_use_ms) {
  ListenSockets sockets;
  for (const Listener& listener : kListeners) {
    if ((config.*listener.address).empty()) {
      continue;
    }
    auto fd = open_one(config, listener, wait_in_use_ms);
    if (!fd.is_ok()) {
      close_listen_sockets(&sockets);
      return fd.status();
    }
    sockets.*listener.fd = *fd;
  }
  return sockets;
}

Result<ListenSockets> reopen_listeners(const Config& running, const ListenSockets& running_sockets,
                                       const Config& next) {
  ListenSockets sockets;
  for (const Listener& listener : kListeners) {
    const std::string& address = next.*listener.address;
    if (address.empty()) {
      continue;
    }
    if (address == running.*listener.address && running_sockets.*listener.fd >= 0) {
      sockets.*listener.fd = running_sockets.*listener.fd;
      continue;
    }
    auto fd = open_one(next, listener, 0);
    if (!fd.is_ok()) {
      close_new(sockets, running_sockets);
      return fd.status();
    }
    sockets.*listener.fd = *fd;
  }
  return sockets;
}

std::string describe_listeners(const Config& config) {
  std::string text =
      "the API (/v1, /healthz, /metrics) on " + config.server_listen + " ([server] listen), ";
  text += config.legacy_listen.empty()
              ? "the legacy protocol off ([server] legacy_listen is empty), "
              : "the legacy protocol on " + config.legacy_listen + " ([server] legacy_listen), ";
  text += config.admin_listen.empty()
              ? "the admin page off ([admin] listen is empty)"
              : "the admin page on http://" + config.admin_listen + "/ ([admin] listen)";
  return text;
}

}  // namespace dq

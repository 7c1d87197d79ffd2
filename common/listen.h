// Listening sockets: opened once by the master and inherited by every API
// server child (and by the next generation on reload), so no connection is
// refused while children come and go.
#pragma once

#include "common/config.h"
#include "common/status.h"

namespace dq {

struct ListenSockets {
  int http_fd = -1;    // [server] listen
  int legacy_fd = -1;  // [server] legacy_listen, -1 when off
};

// Binds and listens (SO_REUSEADDR, non-blocking, backlog 1024).
Result<ListenSockets> open_listen_sockets(const Config& config);
Result<int> listen_on(const std::string& host_port);
void close_listen_sockets(ListenSockets* sockets);

}  // namespace dq

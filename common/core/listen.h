// Listening sockets: opened once by the master and inherited by every API
// server child (and by the next generation on reload), so no connection is
// refused while children come and go. They are opened CLOEXEC; children that
// do not serve close them right after fork, and an API server closes every
// descriptor of them as soon as it stops accepting, so when the master dies
// (kill -9) the ports are free at once for the next dqd.
// No SO_REUSEPORT: it would let a second, unrelated dqd serve the same port
// beside a running one; a new master waits for the old sockets to be released
// (wait_in_use_ms) instead.
#pragma once

#include "common/core/config.h"
#include "common/core/status.h"

namespace dq {

struct ListenSockets {
  int http_fd = -1;    // [server] listen
  int legacy_fd = -1;  // [server] legacy_listen, -1 when off
  int admin_fd = -1;   // [admin] listen, -1 when off
};

// Binds and listens (SO_REUSEADDR, non-blocking, CLOEXEC, backlog 1024).
// While the address is in use, tries again for up to wait_in_use_ms (the
// children of a master that just died may still be closing their copies).
// The Status says why in a few words ("address already in use"); the
// caller names the address and its key (master/listeners.h).
Result<int> listen_on(const std::string& host_port, int wait_in_use_ms = 0);
void close_listen_sockets(ListenSockets* sockets);

}  // namespace dq

// dq-server_N: the client API (HTTP/JSON on [server] listen, the legacy
// framed protocol on [server] legacy_listen) on one libevent loop.
#pragma once

#include "common/core/config.h"
#include "common/core/listen.h"

namespace dq {

// Serves until SIGTERM/SIGINT, then stops accepting, answers what it holds
// and returns 0. The sockets are inherited from the master and not closed.
int run_server(const Config& config, int index, const ListenSockets& sockets);

}  // namespace dq

// dq-admin: the admin web page and its JSON API (admin_app.h), served with
// libevent's evhttp on the [admin] listen socket the master opened.
#pragma once

#include "common/core/config.h"

namespace dq {

// Serves on listen_fd until SIGTERM/SIGINT, then returns 0. With no socket
// (-1: the address was in use when the master opened it) it only waits for
// the stop, so the master does not respawn it in a loop.
int run_admin(const Config& config, int listen_fd);

}  // namespace dq

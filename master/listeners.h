// The master's listening sockets, one per configured address: [server]
// listen (the HTTP API, /healthz and /metrics), [server] legacy_listen and
// [admin] listen. Each failure names its key and the config file:
//   [admin] listen = 127.0.0.1:8088 in /etc/dq/dq.ini: address already in use
// A taken admin port fails the start like the others (the page is how an
// operator sees dq; silently without it is worse than not started), and a
// reload that cannot bind a changed address is refused.
#pragma once

#include <string>

#include "common/core/config.h"
#include "common/core/listen.h"
#include "common/core/status.h"

namespace dq {

// Binds every configured address. While one is in use, tries again for up
// to wait_in_use_ms (the children of a master that just died may still be
// closing their copies); then fails, closing what it opened.
Result<ListenSockets> open_listeners(const Config& config, int wait_in_use_ms);

// The sockets for `next`: those whose address did not change are reused
// from `running_sockets`; the rest are opened. On failure nothing is
// closed or kept. The master then closes what it no longer hands out.
Result<ListenSockets> reopen_listeners(const Config& running, const ListenSockets& running_sockets,
                                       const Config& next);

// For the start log: "the API (/v1, /healthz, /metrics) on 127.0.0.1:6780
// ([server] listen), the legacy protocol on ..., the admin page on
// http://127.0.0.1:8088/ ([admin] listen)"; a listener turned off says so.
std::string describe_listeners(const Config& config);

}  // namespace dq

// The stream for a socket a listener just accepted, as both API ports want
// it: non-blocking, TCP_NODELAY (answers are small and must not wait for
// Nagle), SO_KEEPALIVE when asked (finds peers that vanished without closing).
#pragma once

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/core/event_handles.h"

namespace dq {

// The socket options alone, for a connection that does its own I/O (HTTP).
void prepare_accepted_socket(evutil_socket_t fd, bool keepalive);

// nullptr, with the socket closed, when libevent cannot make the stream.
UniqueBufferevent accepted_stream(event_base* base, evutil_socket_t fd, bool keepalive);

}  // namespace dq

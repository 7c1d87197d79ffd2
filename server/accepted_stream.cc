#include "server/accepted_stream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace dq {

void prepare_accepted_socket(evutil_socket_t fd, bool keepalive) {
  int on = 1;
  if (keepalive) {
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  evutil_make_socket_nonblocking(fd);
}

UniqueBufferevent accepted_stream(event_base* base, evutil_socket_t fd, bool keepalive) {
  prepare_accepted_socket(fd, keepalive);
  UniqueBufferevent stream(bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE));
  if (stream == nullptr) {
    evutil_closesocket(fd);
  }
  return stream;
}

}  // namespace dq

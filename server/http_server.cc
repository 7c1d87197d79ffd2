// HttpServer (see http_server.h): the listeners and the set of connections.
#include "server/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/accepted_stream.h"
#include "server/http_connection.h"

namespace dq {

HttpServer::HttpServer(event_base* base, const Config& config, Handler handler)
    : base_(base),
      config_(config),
      handler_(std::move(handler)),
      idle_timeval_{config.idle_timeout_ms / 1000,
                    static_cast<suseconds_t>(config.idle_timeout_ms % 1000) * 1000},
      idle_timeout_(event_base_init_common_timeout(base, &idle_timeval_)) {
  if (idle_timeout_ == nullptr) {
    idle_timeout_ = &idle_timeval_;  // a plain timeout then
  }
}

HttpServer::~HttpServer() {
  listeners_.clear();
  connections_.clear();  // each connection detaches the exchanges it still holds
}

Status HttpServer::listen(int fd) {
  // A copy, closed with the listener: the inherited descriptor is the
  // caller's to close (run_server does, right after stop_accepting()).
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) {
    return Status(Code::kInternal, "cannot accept on the HTTP socket");
  }
  evutil_make_socket_nonblocking(own);
  // Backlog 0: the master already called listen().
  UniqueEvconnlistener listener(evconnlistener_new(
      base_, &HttpServer::on_accept, this, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 0, own));
  if (listener == nullptr) {
    close(own);
    return Status(Code::kInternal, "cannot accept on the HTTP socket");
  }
  listeners_.push_back(std::move(listener));
  return Status::ok();
}

void HttpServer::stop_accepting() {
  stopping_ = true;
  listeners_.clear();
}

void HttpServer::on_accept(evconnlistener* /*listener*/, evutil_socket_t fd, sockaddr* /*address*/,
                           int /*length*/, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  if (self->stopping_) {
    evutil_closesocket(fd);
    return;
  }
  prepare_accepted_socket(fd, /*keepalive=*/false);
  std::string refusal;
  size_t open = self->connections_.size();
  if (open >= static_cast<size_t>(self->config_.max_connections)) {
    refusal = "too many connections (" + std::to_string(open) +
              " open; [server] max_connections is " +
              std::to_string(self->config_.max_connections) + "); try again";
  }
  auto connection = std::make_unique<HttpConnection>(*self, fd, std::move(refusal));
  HttpConnection* raw = connection.get();
  self->connections_.emplace(raw, std::move(connection));
  raw->start();
}

void HttpServer::closed(HttpConnection* connection) { connections_.erase(connection); }

}  // namespace dq

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
  acceptors_.clear();
  if (in_budget_) {
    ConnectionBudget::of_process().remove_pool(this);
  }
  // Each connection detaches the exchanges it still holds.
  size_t open = connections_.size();
  connections_.clear();
  order_.clear();
  for (size_t i = 0; i < open; ++i) {
    ConnectionBudget::of_process().closed();
  }
}

Status HttpServer::listen(int fd) {
  // A copy, closed with the acceptor: the inherited descriptor is the
  // caller's to close (run_server does, right after stop_accepting()).
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) {
    return Status(Code::kInternal, "cannot accept on the HTTP socket");
  }
  evutil_make_socket_nonblocking(own);
  // The master already called listen(). The budget is sized here, once the
  // process holds its other descriptors (Redis, logs, SQLite).
  if (!in_budget_) {
    ConnectionBudget::of_process().add_pool(this);
    in_budget_ = true;
  }
  auto acceptor =
      std::make_unique<Acceptor>(base_, own, /*owns_fd=*/true, "HTTP",
                                 [this](evutil_socket_t accepted) { on_accept(accepted); });
  if (!acceptor->ok()) {
    return Status(Code::kInternal, "cannot accept on the HTTP socket");
  }
  acceptors_.push_back(std::move(acceptor));
  return Status::ok();
}

void HttpServer::stop_accepting() {
  stopping_ = true;
  acceptors_.clear();
}

void HttpServer::on_accept(evutil_socket_t fd) {
  if (stopping_) {
    evutil_closesocket(fd);
    ConnectionBudget::of_process().closed();
    return;
  }
  prepare_accepted_socket(fd, /*keepalive=*/false);
  size_t limit = static_cast<size_t>(config_.max_connections);
  if (connections_.size() >= limit && order_.oldest(&HttpConnection::idle).first != nullptr) {
    close_oldest_idle();  // an idle connection makes room for the new one
  }
  std::string refusal;
  size_t open = connections_.size();
  if (open >= limit) {
    refusal = "too many connections (" + std::to_string(open) +
              " open, none idle; [server] max_connections is " +
              std::to_string(config_.max_connections) + "); try again";
  }
  auto connection = std::make_unique<HttpConnection>(*this, fd, std::move(refusal));
  HttpConnection* raw = connection.get();
  connections_.emplace(raw, std::move(connection));
  raw->place_ = order_.add(raw);
  raw->start();
}

void HttpServer::touch(HttpConnection* connection) { order_.touch(connection->place_); }

uint64_t HttpServer::oldest_idle() { return order_.oldest(&HttpConnection::idle).second; }

void HttpServer::close_oldest_idle() {
  if (HttpConnection* connection = order_.oldest(&HttpConnection::idle).first) {
    connection->close();  // deletes it
  }
}

void HttpServer::closed(HttpConnection* connection) {
  order_.remove(connection->place_);
  connections_.erase(connection);
  ConnectionBudget::of_process().closed();
}

}  // namespace dq

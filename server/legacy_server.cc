// LegacyServer: accepts connections of the PHP delay queue's framed protocol
// within the process's descriptor budget and keeps them, least recently
// active first; each connection is a LegacyConnection
// (server/legacy_connection.h).
#include "server/legacy_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "common/core/clock.h"
#include "common/core/json_span.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "server/accepted_stream.h"
#include "server/legacy_connection.h"

namespace dq {

LegacyServer::LegacyServer(event_base* base, int listen_fd, AsyncJobStore& jobs, TopicCache& topics,
                           ApiAuth& auth, const Config& config)
    : base_(base), jobs_(jobs), topics_(topics), auth_(auth), config_(config) {
  ConnectionBudget::of_process().add_pool(this);
  // Not the acceptor's to close: the inherited socket outlives it. The
  // master already called listen().
  acceptor_ = std::make_unique<Acceptor>(base, listen_fd, /*owns_fd=*/false, "legacy",
                                         [this](evutil_socket_t fd) { on_accept(fd); });
  if (!acceptor_->ok()) {
    err_log().error("legacy protocol: cannot accept on fd {}", listen_fd);
  }
}

LegacyServer::~LegacyServer() {
  acceptor_.reset();
  ConnectionBudget::of_process().remove_pool(this);
  size_t open = connections_.size();
  connections_.clear();
  order_.clear();
  for (size_t i = 0; i < open; ++i) {
    ConnectionBudget::of_process().closed();
  }
}

void LegacyServer::on_accept(evutil_socket_t fd) {
  if (stopping_) {
    evutil_closesocket(fd);
    ConnectionBudget::of_process().closed();
    return;
  }
  // Idle connections are cut after [server] legacy_idle_timeout_ms (300 s,
  // as the PHP server did); keepalive finds peers that vanished without closing.
  UniqueBufferevent event = accepted_stream(base_, fd, /*keepalive=*/true);
  if (event == nullptr) {
    ConnectionBudget::of_process().closed();
    return;
  }
  size_t limit = static_cast<size_t>(config_.max_connections);
  if (connections_.size() >= limit &&
      order_.oldest(&LegacyConnection::evictable).first != nullptr) {
    close_oldest_idle();  // an idle connection makes room for the new one
  }
  bool too_many = connections_.size() >= limit;
  auto connection = std::make_shared<LegacyConnection>(*this, std::move(event));
  connections_[connection.get()] = connection;
  connection->place_ = order_.add(connection.get());
  connection->start();
  if (too_many) {
    connection->refuse("too many connections (" + std::to_string(connections_.size() - 1) +
                       " open, none idle; [server] max_connections is " +
                       std::to_string(config_.max_connections) + "); try again");
  }
}

void LegacyServer::stop_accepting() {
  stopping_ = true;
  acceptor_.reset();
  // stop() may close (erase) the connection, so walk a copy.
  std::vector<std::shared_ptr<LegacyConnection>> open;
  for (auto& entry : connections_) {
    open.push_back(entry.second);
  }
  for (auto& connection : open) {
    connection->stop();
  }
}

size_t LegacyServer::connections() const { return connections_.size(); }

void LegacyServer::touch(LegacyConnection* connection) { order_.touch(connection->place_); }

uint64_t LegacyServer::oldest_idle() { return order_.oldest(&LegacyConnection::evictable).second; }

void LegacyServer::close_oldest_idle() {
  if (LegacyConnection* connection = order_.oldest(&LegacyConnection::evictable).first) {
    connection->evict();
  }
}

void LegacyServer::closed(LegacyConnection* connection) {
  auto it = connections_.find(connection);
  if (it == connections_.end()) {
    return;
  }
  order_.remove(connection->place_);
  connections_.erase(it);
  ConnectionBudget::of_process().closed();
}

}  // namespace dq

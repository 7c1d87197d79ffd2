// HttpServer: dq's own HTTP/1.1 server for the JSON API, on libevent
// bufferevents (evhttp cost ~45 % of an add's instructions). It accepts
// connections on the API's listening socket, one HttpConnection each
// (server/http_connection.h), and hands every whole request to one handler
// as an HttpExchange. Limits ([server] in conf/dq.ini, docs/security.md):
// max_connections (at it, the connection idle the longest is closed to make
// room; when none is idle, the new connection's first request is handed over
// with a refusal to answer 503, then it closes), max_header_bytes (431),
// max_request_bytes (413), request_timeout_ms (a request not whole by then:
// 408 and close), idle_timeout_ms (a silent connection is closed). Accepts
// only within the process's descriptor budget (server/connection_budget.h).
#pragma once

#include <event2/event.h>

#include <functional>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/status.h"
#include "server/acceptor.h"
#include "server/activity_order.h"
#include "server/connection_budget.h"
#include "server/http_exchange.h"

namespace dq {

class HttpConnection;

class HttpServer : public ConnectionPool {
 public:
  using Handler = std::function<void(const std::shared_ptr<HttpExchange>&)>;
  HttpServer(event_base* base, const Config& config, Handler handler);
  ~HttpServer() override;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves on an inherited listening socket (a copy of fd; fd stays the caller's).
  Status listen(int fd);
  // Graceful stop: no new connections (the copies are closed); answers from
  // now on carry "Connection: close" and their connection closes after them.
  void stop_accepting();
  bool stopping() const { return stopping_; }
  size_t connections() const { return connections_.size(); }

  // ConnectionPool: the connections in the order they last started a request.
  uint64_t oldest_idle() override;
  void close_oldest_idle() override;

 private:
  friend class HttpConnection;
  void on_accept(evutil_socket_t fd);
  void closed(HttpConnection* connection);  // deletes it
  void touch(HttpConnection* connection);   // it started a request

  event_base* base_;
  const Config& config_;
  Handler handler_;
  // idle_timeout_ms as one of the loop's common timeouts: every connection
  // re-arms it per request, and a common timeout is a queue append, not a
  // heap operation.
  timeval idle_timeval_;
  const timeval* idle_timeout_;
  std::vector<std::unique_ptr<Acceptor>> acceptors_;
  bool stopping_ = false;
  bool in_budget_ = false;  // registered as a pool of the process's budget
  std::unordered_map<HttpConnection*, std::unique_ptr<HttpConnection>> connections_;
  ActivityOrder<HttpConnection> order_;
};

}  // namespace dq

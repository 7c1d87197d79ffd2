// HttpServer: dq's own HTTP/1.1 server for the JSON API, on libevent
// bufferevents (evhttp cost ~45 % of an add's instructions). It accepts
// connections on the API's listening socket, one HttpConnection each
// (server/http_connection.h), and hands every whole request to one handler
// as an HttpExchange. Limits ([server] in conf/dq.ini, docs/security.md):
// max_connections (the connection's first request is handed over with a
// refusal to answer 503, then it closes), max_header_bytes (431),
// max_request_bytes (413), request_timeout_ms (a request not whole by then:
// 408 and close), idle_timeout_ms (a silent connection is closed).
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/status.h"
#include "server/http_exchange.h"

namespace dq {

class HttpConnection;

class HttpServer {
 public:
  using Handler = std::function<void(const std::shared_ptr<HttpExchange>&)>;
  HttpServer(event_base* base, const Config& config, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves on an inherited listening socket (a copy of fd; fd stays the caller's).
  Status listen(int fd);
  // Graceful stop: no new connections (the copies are closed); answers from
  // now on carry "Connection: close" and their connection closes after them.
  void stop_accepting();
  bool stopping() const { return stopping_; }
  size_t connections() const { return connections_.size(); }

 private:
  friend class HttpConnection;
  static void on_accept(evconnlistener* listener, evutil_socket_t fd, sockaddr* address, int length,
                        void* arg);
  void closed(HttpConnection* connection);  // deletes it

  event_base* base_;
  const Config& config_;
  Handler handler_;
  // idle_timeout_ms as one of the loop's common timeouts: every connection
  // re-arms it per request, and a common timeout is a queue append, not a
  // heap operation.
  timeval idle_timeval_;
  const timeval* idle_timeout_;
  std::vector<UniqueEvconnlistener> listeners_;
  bool stopping_ = false;
  std::unordered_map<HttpConnection*, std::unique_ptr<HttpConnection>> connections_;
};

}  // namespace dq

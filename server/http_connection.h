// HttpConnection: one accepted socket of the HTTP API. Reassembles requests
// from any split of TCP reads (server/http_parser.h), hands each whole one to
// the server's handler, one at a time (a pipelined request runs once the one
// before it is answered), and writes the answers in request order. Sends "100 Continue" to a client
// that waits for it before its body. A request whose head or body breaks a limit or the syntax gets
// a JSON error, after the answers before it, and the connection closes; so does one whose request
// is not whole within request_timeout_ms of its first byte (408). After its last answer it stops
// writing and reads what the client still sends for a moment, so that the answer is not lost to a
// TCP reset.
#pragma once

#include <event2/bufferevent.h>
#include <event2/event.h>

#include <deque>
#include <memory>
#include <string>

#include "server/http_exchange.h"
#include "server/http_parser.h"

namespace dq {

class HttpServer;

class HttpConnection {
 public:
  HttpConnection(HttpServer& server, bufferevent* event, std::string refusal);
  ~HttpConnection();  // detaches the exchanges not yet written
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void start();
  // True when the connection closes after this answer (the client's wish,
  // a refused or failed connection, a server that stops).
  bool closes_after(const HttpExchange& exchange) const;
  // An exchange was answered: write what is next in order. May delete this.
  void exchange_answered();

 private:
  struct BuffereventDeleter {
    void operator()(bufferevent* event) const { bufferevent_free(event); }
  };
  struct EventDeleter {
    void operator()(event* timer) const { event_free(timer); }
  };

  static void on_read(bufferevent* event, void* arg);
  static void on_write(bufferevent* event, void* arg);
  static void on_event(bufferevent* event, short what, void* arg);
  static void on_request_timeout(evutil_socket_t fd, short what, void* arg);
  static void on_linger_timeout(evutil_socket_t fd, short what, void* arg);

  // Parses and hands over whole requests, writes answers in order, and
  // closes when the connection is done. May delete this.
  void pump();
  void take_requests();
  void write_answers();
  // An error of dq's HTTP layer: a JSON answer after those before it, then close.
  void fail(int status, const std::string& message);
  void maybe_continue();
  void arm_request_timer();
  void disarm_request_timer();
  void linger();  // the last answer is written: stop writing, read until EOF
  void close();   // deletes this

  HttpServer& server_;
  std::unique_ptr<bufferevent, BuffereventDeleter> event_;
  std::unique_ptr<event, EventDeleter> request_timer_;
  std::unique_ptr<event, EventDeleter> linger_timer_;
  HttpParser parser_;
  std::string input_;  // bytes read and not yet consumed start at input_start_
  size_t input_start_ = 0;
  std::deque<std::shared_ptr<HttpExchange>> queue_;  // handed over, in request order
  std::string refusal_;
  bool request_armed_ = false;
  bool continue_sent_ = false;
  bool pumping_ = false;
  bool closing_ = false;  // no more requests: close once the queue is written
  bool lingering_ = false;
  bool peer_closed_ = false;   // the client shut down its side
  bool drained_input_ = true;  // no whole request waits in input_
};

}  // namespace dq

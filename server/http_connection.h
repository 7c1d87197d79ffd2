// HttpConnection: one accepted socket of the HTTP API. Reassembles requests
// from any split of TCP reads (server/http_parser.h), hands each whole one to
// the server's handler, one at a time (a pipelined request runs once the one
// before it is answered), and writes the answers in request order. Sends "100 Continue" to a client
// that waits for it before its body. A request whose head or body breaks a limit or the syntax gets
// a JSON error, after the answers before it, and the connection closes; so does one whose request
// is not whole within request_timeout_ms of its first byte (408). After its last answer it stops
// writing and reads what the client still sends for a moment, so that the answer is not lost to a
// TCP reset.
//
// It does its own socket I/O on two plain events rather than a bufferevent:
// an add is one recv and one send, with no epoll_ctl. The read event stays
// armed while a request waits for its answer (bufferevents and a paused read
// cost an epoll_ctl DEL and ADD per request, and an FIONREAD ioctl per read);
// an answer is sent at once, and the write event is armed only when the
// socket takes less than all of it (docs/decisions.md, "An HTTP connection does its own socket
// I/O").
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>

#include "common/core/event_handles.h"
#include "server/activity_order.h"
#include "server/http_exchange.h"
#include "server/http_parser.h"

namespace dq {

class HttpServer;

class HttpConnection {
 public:
  // Owns fd (non-blocking, closed with the connection).
  HttpConnection(HttpServer& server, evutil_socket_t fd, std::string refusal);
  ~HttpConnection();  // detaches the exchanges not yet written, closes the socket
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void start();
  // True when the connection closes after this answer (the client's wish,
  // a refused or failed connection, a server that stops).
  bool closes_after(const HttpExchange& exchange) const;
  // An exchange was answered: write what is next in order. May delete this.
  void exchange_answered();
  // No request in progress, nothing received and not yet read, nothing left
  // to write: the server may close it to make room (a lingering connection
  // is closing anyway). Under pressure only: it may peek at the socket.
  bool idle() const;
  // The client shut down its side (read end of file).
  bool peer_closed() const { return peer_closed_; }

 private:
  friend class HttpServer;

  static void on_readable(evutil_socket_t fd, short what, void* arg);
  static void on_writable(evutil_socket_t fd, short what, void* arg);
  static void on_request_timeout(evutil_socket_t fd, short what, void* arg);
  static void on_linger_timeout(evutil_socket_t fd, short what, void* arg);

  // Parses and hands over whole requests, writes answers in order, and
  // closes when the connection is done. May delete this.
  void pump();
  void take_requests();
  // Writes the answers due in order; true when one left the queue (a place
  // for the next pipelined request).
  bool write_answers();
  // Sends now what the socket takes; the rest waits in output_ for the write event.
  void send_bytes(const char* data, size_t size);
  size_t output_size() const { return output_.size() - output_start_; }
  void set_reading(bool on);
  void idle_timed_out(bool reading);
  // An error of dq's HTTP layer: a JSON answer after those before it, then close.
  void fail(int status, const std::string& message);
  void maybe_continue();
  void arm_request_timer();
  void disarm_request_timer();
  void linger();  // the last answer is written: stop writing, read until EOF
  void close();   // deletes this

  HttpServer& server_;
  evutil_socket_t fd_;
  ActivityOrder<HttpConnection>::Place place_;  // in the server's order_
  UniqueEvent read_event_;                      // persistent; idle timeout
  UniqueEvent write_event_;                     // armed while output_ waits
  UniqueEvent request_timer_;
  UniqueEvent linger_timer_;
  HttpParser parser_;
  std::string input_;  // bytes read and not yet consumed start at input_start_
  size_t input_start_ = 0;
  std::string output_;  // answer bytes the socket did not take yet, from output_start_
  size_t output_start_ = 0;
  std::deque<std::shared_ptr<HttpExchange>> queue_;  // handed over, in request order
  std::string refusal_;
  bool request_armed_ = false;
  bool reading_ = false;
  bool writing_ = false;  // write_event_ is armed
  bool continue_sent_ = false;
  bool pumping_ = false;
  bool closing_ = false;  // no more requests: close once the queue is written
  bool lingering_ = false;
  bool peer_closed_ = false;   // the client shut down its side
  bool drained_input_ = true;  // no whole request waits in input_
};

}  // namespace dq

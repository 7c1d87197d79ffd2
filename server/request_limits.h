// RequestLimits: the HTTP API's limits on connections, request heads and
// bodies, and slow clients, all answered with JSON.
//
// libevent 2.1 answers an oversized head or body (and a malformed request)
// itself, with an HTML page, and has no hook for it (evhttp_set_errorcb is
// 2.2). So each connection's bufferevent is made here (evhttp_set_bevcb) with
// a watch on its output that turns libevent's canned HTML error page into a
// JSON one before it is written, and a watch on its input that closes a
// connection whose request does not arrive whole within request_timeout_ms
// (one byte a second cannot hold a connection).
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/config.h"

namespace dq {

class RequestLimits {
 public:
  RequestLimits(evhttp* http, const Config& config);  // installs the limits
  RequestLimits(const RequestLimits&) = delete;
  RequestLimits& operator=(const RequestLimits&) = delete;

  struct Refusal {
    int status;
    std::string error;
  };
  // Called for every request evhttp hands over: counts its connection, and
  // says when it must be refused (too many connections). The refusal closes
  // the connection once answered.
  std::optional<Refusal> admit(evhttp_request* request);
  size_t connections() const { return connections_; }

 private:
  struct Watch {
    bufferevent* stream = nullptr;
    int64_t request_started_ms = 0;  // first byte of a request not yet handed over; 0: none
    bool counted = false;            // its evhttp connection is counted (and has a close callback)
  };
  static bufferevent* make_bufferevent(event_base* base, void* arg);
  static void on_input(evbuffer* input, const evbuffer_cb_info* info, void* arg);
  static void on_output(evbuffer* output, const evbuffer_cb_info* info, void* arg);
  static void on_connection_closed(evhttp_connection* connection, void* arg);

  const Config& config_;
  // Per connection, by its input buffer. An entry whose connection closed
  // before a request got through stays until that address is reused.
  std::map<evbuffer*, Watch> watches_;
  size_t connections_ = 0;
  std::map<int, std::string> explain_;  // what each canned error status means here
};

// libevent's canned HTML error answer at the end of `output` turned into a
// JSON one; false when `output` does not end with one. `explain` adds, per
// status, what dq's limits are.
bool rewrite_canned_error(evbuffer* output, const std::map<int, std::string>& explain);

}  // namespace dq

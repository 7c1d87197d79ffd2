// HttpExchange: one HTTP request of the API and its answer. The connection
// (server/http_connection.h) makes it once the request is whole and hands it
// to the API's handler; the handler (now, or when Redis answers) calls
// answer() once. Handlers keep it alive with a shared_ptr: a connection that
// closes before the answer detaches it, and the answer then goes nowhere.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "server/http_parser.h"

namespace dq {

class HttpConnection;

class HttpExchange {
 public:
  HttpExchange(HttpRequestHead head, std::string body, HttpConnection* connection,
               std::string refusal);
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  const std::string& method() const { return head_.method; }
  const std::string& target() const { return head_.target; }  // as sent, query included
  std::string_view path() const;   // the target's path ("/" for an empty one)
  std::string_view query() const;  // after '?', "" when none
  const HttpRequestHead& head() const { return head_; }
  const std::string& body() const { return body_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  // Not empty: the connection is over [server] max_connections; answer 503
  // with this message (the connection closes after it).
  const std::string& refusal() const { return refusal_; }

  // A header for the answer ("Allow", "WWW-Authenticate"); before answer().
  void add_header(std::string_view name, std::string_view value);
  // Answers (once; later calls are ignored). 204 carries no body.
  void answer(int status, std::string_view content_type, std::string_view body,
              std::string_view body_suffix = {});
  bool answered() const { return answered_; }
  // The client closed its connection (or it was closed): an answer would go
  // nowhere. A long poll (server/pull_queue.h) stops waiting then.
  bool peer_gone() const;

 private:
  friend class HttpConnection;

  HttpRequestHead head_;
  std::string body_;
  HttpConnection* connection_;  // nullptr once the connection closed
  std::string refusal_;
  std::chrono::steady_clock::time_point started_;
  std::string extra_headers_;
  bool answered_ = false;
  bool closes_ = false;  // the connection closes after this answer
  std::string reply_;    // the answer's bytes, until the connection writes them
};

}  // namespace dq

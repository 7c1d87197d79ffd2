// CallbackServer: a real HTTP server for delivery tests (libevent evhttp in
// its own thread, on a free port of 127.0.0.1). It records every request and
// answers each as the test programs it: a status, optionally after a delay
// (a slow callback URL).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dq::test {

struct RecordedRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // without the query
  std::string query;                           // raw, without '?'
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  int64_t arrived_ms = 0;  // wall clock, like a job's due_at_ms
  bool answered = false;   // its answer was sent (not dropped: the client hung up first)

  std::string header(const std::string& lower_name) const;
  // A decoded query parameter ("" when absent).
  std::string param(const std::string& name) const;
  // A decoded field of an application/x-www-form-urlencoded body ("" when absent).
  std::string form_field(const std::string& name) const;
};

// Name/value pairs of a query string or form body, in order, decoded as PHP
// fills $_GET and $_POST (%XX and '+').
std::vector<std::pair<std::string, std::string>> parse_form(const std::string& text);

struct CallbackAnswer {
  CallbackAnswer(int status_code = 200, int delay = 0, std::string answer_body = "")
      : status(status_code), delay_ms(delay), body(std::move(answer_body)) {}

  int status = 200;
  int delay_ms = 0;      // answer this much later (the server keeps serving others)
  bool hang_up = false;  // close the connection without any answer
  std::string location;  // a Location header (for 3xx answers)
  std::string body;      // the answer's body; empty: {"status":N}
  // A Retry-After header ("1" or an HTTP-date); empty: none.
  std::string retry_after;
};

// Called on the server thread, in arrival order; n counts from 0.
using Responder = std::function<CallbackAnswer(const RecordedRequest& request, size_t n)>;

class CallbackServer {
 public:
  // bind_host "0.0.0.0" also takes callbacks from a dqd in a network namespace.
  // port 0: a free one; else that port (to come back where a stopped one was).
  explicit CallbackServer(const std::string& bind_host = "127.0.0.1",
                          int port = 0);  // started; answers 200 at once until told otherwise
  ~CallbackServer();
  CallbackServer(const CallbackServer&) = delete;
  CallbackServer& operator=(const CallbackServer&) = delete;

  int port() const;
  std::string url(const std::string& path = "/callback") const;

  void set_responder(Responder responder);
  // The first answers are these statuses, in order; then `then`.
  void answer_with(std::vector<int> statuses, int then = 200);

  std::vector<RecordedRequest> requests() const;
  size_t count() const;
  // Requests open now (arrived, not yet answered or hung up), and the most
  // that were ever open at once.
  size_t open_now() const;
  size_t most_open() const;
  // True once at least `count` requests arrived, false after timeout_ms.
  bool wait_for(size_t count, int timeout_ms) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dq::test

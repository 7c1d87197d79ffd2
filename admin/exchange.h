// Exchange: one admin HTTP request and its answer. Wraps evhttp_request with
// the parts the handlers need (method, decoded path, query, body, cookies)
// and answers with the headers every admin answer carries (CSP, frame and
// sniffing protection, no referrer, no caching).
//
// A handler may answer later, from the event loop (the Redis reads of
// common/store/ are asynchronous): it keeps the exchange alive with
// hold() and replies from its callback; evhttp keeps the request until then
// (and frees it on that reply when the client has gone meanwhile). Each
// answer is logged to the request log when it is sent.
#pragma once

#include <event2/http.h>

#include <memory>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  explicit Exchange(evhttp_request* request);
  // Keeps this exchange (made with std::make_shared) for a later reply.
  std::shared_ptr<Exchange> hold() { return shared_from_this(); }

  const std::string& method() const { return method_; }           // GET, POST, PUT, DELETE, OTHER
  const std::vector<std::string>& path() const { return path_; }  // decoded parts
  const std::string& body() const { return body_; }
  std::string query(const char* name) const;  // "" when absent
  std::string header(const char* name) const;
  std::string cookie(const std::string& name) const;
  std::string peer_ip() const;
  bool over_https() const;  // X-Forwarded-Proto: https from a TLS proxy in front
  bool changes_state() const { return method_ != "GET" && method_ != "HEAD"; }

  // The body as a JSON object; kInvalid when it is not one.
  Result<Json> json_object() const;
  // An integer query parameter within [min, max], fallback when absent.
  Result<int64_t> query_int(const char* name, int64_t fallback, int64_t min, int64_t max) const;
  // ?offset= (default 0) and ?limit= (default 50, at most 500) of a listing;
  // false after answering 400 when either is out of range.
  bool page(int64_t* offset, int64_t* limit);

  void set_header(const char* name, const std::string& value);
  void reply(int status, const std::string& content_type, const std::string& bytes);
  void reply_json(int status, const Json& body);
  // {"error": message} with the status for the code (kInvalid 400 ...).
  void reply_error(const Status& status);
  void reply_error(int http_status, const std::string& message);
  void redirect(const std::string& location);

  int status() const { return status_; }

 private:
  evhttp_request* request_;
  std::string method_;
  std::vector<std::string> path_;
  std::string body_;
  int status_ = 0;
};

}  // namespace dq

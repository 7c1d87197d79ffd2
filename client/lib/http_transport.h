// HttpTransport: one keep-alive libcurl easy handle per server, and one
// blocking request with connect and total timeouts. It reports what
// happened on the wire; client.cc decides what it means.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>

#include "common/http/curl_handle.h"  // header-only: libcurl's owning handles

namespace dq::client {

struct HttpAnswer {
  CURLcode curl = CURLE_OK;  // not CURLE_OK: no answer (status is 0)
  std::string curl_error;
  long status = 0;
  std::string body;
};

class HttpTransport {
 public:
  HttpTransport();  // calls curl_global_init once per process

  // base_url: "http://host:port". path already percent-encoded. POST, PUT
  // and PATCH send body as JSON. extra_header: one more header line, or "".
  HttpAnswer request(const std::string& base_url, const char* method, const std::string& path,
                     const std::string& body, int connect_timeout_ms, int timeout_ms,
                     const std::string& extra_header = "");

  // Sent as "Authorization: Bearer <token>" on every request from now on ("" for none).
  void set_bearer_token(const std::string& token);

  // Percent-encodes one path segment.
  std::string escape(const std::string& segment);

 private:
  // One handle for every server: curl keeps a connection cache per handle
  // (keyed by host and port), so each server keeps its own keep-alive connection.
  CurlEasy easy_;
  std::string authorization_;  // the header line, or ""
};

}  // namespace dq::client

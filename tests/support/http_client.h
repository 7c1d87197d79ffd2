// A small blocking HTTP client for tests (libcurl). One HttpClient reuses its
// connection (keep-alive) like a real producer would.
#pragma once

#include <curl/curl.h>

#include <map>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/http/curl_handle.h"

namespace dq::test {

struct HttpResult {
  long status = 0;  // 0 when the request failed before an answer
  std::string body;
  std::string error;  // curl's message when status == 0
  std::string content_type;
  std::map<std::string, std::string> headers;  // the answer's, by lower-case name

  Json json() const;  // parsed body; discarded JSON when it is not JSON
  // The value of header `name` (any case), "" when absent.
  std::string header(const std::string& name) const;
};

class HttpClient {
 public:
  HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // request_headers: header lines for this request only ("If-Match: \"3\"").
  HttpResult request(const std::string& method, const std::string& url,
                     const std::string& body = "", int timeout_ms = 5000,
                     const std::vector<std::string>& request_headers = {});
  HttpResult get(const std::string& url) { return request("GET", url); }
  HttpResult post(const std::string& url, const std::string& body) {
    return request("POST", url, body);
  }
  HttpResult del(const std::string& url) { return request("DELETE", url); }
  // A header line ("Authorization: Bearer x") sent with every later request.
  void add_header(const std::string& line) { extra_headers_.push_back(line); }

 private:
  CurlEasy curl_;
  std::vector<std::string> extra_headers_;
};

// libcurl's CURLOPT_HEADERFUNCTION: one header line of an answer into the
// std::map<std::string, std::string>* user (lower-case name -> value; the
// status line and the blank line end up nowhere).
size_t keep_header_line(char* data, size_t size, size_t count, void* user);

// One-off request on a fresh connection.
HttpResult http_request(const std::string& method, const std::string& url,
                        const std::string& body = "", int timeout_ms = 5000);

}  // namespace dq::test

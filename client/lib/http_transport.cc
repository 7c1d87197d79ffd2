// HttpTransport: blocking libcurl requests over a reused easy handle.
#include "http_transport.h"

#include <mutex>
#include <stdexcept>

namespace dq::client {
namespace {

size_t append_to_string(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

}  // namespace

HttpTransport::HttpTransport() {
  static std::once_flag global_init;
  std::call_once(global_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  easy_.reset(curl_easy_init());
  if (!easy_) {
    throw std::runtime_error("dqclient: curl_easy_init failed");
  }
}

void HttpTransport::set_bearer_token(const std::string& token) {
  authorization_ = token.empty() ? std::string() : "Authorization: Bearer " + token;
}

std::string HttpTransport::escape(const std::string& segment) {
  char* escaped = curl_easy_escape(easy_.get(), segment.data(), static_cast<int>(segment.size()));
  std::string out = escaped ? escaped : "";
  curl_free(escaped);
  return out;
}

HttpAnswer HttpTransport::request(const std::string& base_url, const char* method,
                                  const std::string& path, const std::string& body,
                                  int connect_timeout_ms, int timeout_ms,
                                  const std::string& extra_header) {
  CURL* easy = easy_.get();
  // Reset clears the options but keeps the connection cache, so keep-alive survives.
  curl_easy_reset(easy);
  HttpAnswer answer;
  char error_text[CURL_ERROR_SIZE] = {0};
  std::string url = base_url + path;
  CurlSlist headers;
  append_header(headers, "Accept: application/json");
  append_header(headers, "Expect:");  // no 100-continue round trip for larger bodies
  if (!authorization_.empty()) {
    append_header(headers, authorization_.c_str());
  }
  if (!extra_header.empty()) {
    append_header(headers, extra_header.c_str());
  }

  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe in threads
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout_ms));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_MAXCONNECTS, 32L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &append_to_string);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &answer.body);
  std::string verb = method;
  // POST, PUT and PATCH send a JSON body (curl's POST machinery, renamed).
  if (verb == "POST" || verb == "PUT" || verb == "PATCH") {
    append_header(headers, "Content-Type: application/json");
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  if (verb != "GET" && verb != "POST") {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get());

  answer.curl = curl_easy_perform(easy);
  if (answer.curl == CURLE_OK) {
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &answer.status);
  } else {
    answer.curl_error = error_text[0] ? error_text : curl_easy_strerror(answer.curl);
  }
  // The header list dies here; drop curl's pointer to it.
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
  return answer;
}

}  // namespace dq::client

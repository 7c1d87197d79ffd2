#include "tests/support/http_client.h"

namespace dq::test {
namespace {

size_t append(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

}  // namespace

Json HttpResult::json() const { return Json::parse(body, nullptr, false); }

HttpClient::HttpClient() : curl_(curl_easy_init()) {}

HttpResult HttpClient::request(const std::string& method, const std::string& url,
                               const std::string& body, int timeout_ms) {
  HttpResult result;
  curl_easy_setopt(curl_.get(), CURLOPT_URL, url.c_str());
  // POSTFIELDS switches the handle to POST, so a reused handle is reset to
  // GET first and given a body only when the method carries one.
  curl_easy_setopt(curl_.get(), CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(curl_.get(), CURLOPT_NOBODY, method == "HEAD" ? 1L : 0L);
  if (method == "POST" || method == "PUT") {
    curl_easy_setopt(curl_.get(), CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl_.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl_.get(), CURLOPT_CUSTOMREQUEST, method.c_str());
  CurlSlist headers;
  append_header(headers, "Content-Type: application/json");
  append_header(headers, "Expect:");
  for (const auto& line : extra_headers_) {
    append_header(headers, line.c_str());
  }
  curl_easy_setopt(curl_.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl_.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(curl_.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl_.get(), CURLOPT_WRITEFUNCTION, &append);
  curl_easy_setopt(curl_.get(), CURLOPT_WRITEDATA, &result.body);
  CURLcode code = curl_easy_perform(curl_.get());
  curl_easy_setopt(curl_.get(), CURLOPT_HTTPHEADER, nullptr);  // the list dies here
  if (code != CURLE_OK) {
    result.error = curl_easy_strerror(code);
    return result;
  }
  curl_easy_getinfo(curl_.get(), CURLINFO_RESPONSE_CODE, &result.status);
  char* type = nullptr;
  curl_easy_getinfo(curl_.get(), CURLINFO_CONTENT_TYPE, &type);
  if (type != nullptr) {
    result.content_type = type;
  }
  return result;
}

HttpResult http_request(const std::string& method, const std::string& url, const std::string& body,
                        int timeout_ms) {
  HttpClient client;
  return client.request(method, url, body, timeout_ms);
}

}  // namespace dq::test

#include "tests/support/http_client.h"

#include <cctype>

namespace dq::test {
namespace {

size_t append(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

}  // namespace

Json HttpResult::json() const { return Json::parse(body, nullptr, false); }

std::string HttpResult::header(const std::string& name) const {
  auto lower = [](std::string text) {
    for (char& c : text) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return text;
  };
  std::string wanted = lower(name) + ":";
  size_t start = 0;
  while (start < head.size()) {
    size_t end = head.find("\r\n", start);
    if (end == std::string::npos) {
      end = head.size();
    }
    std::string line = head.substr(start, end - start);
    if (lower(line.substr(0, wanted.size())) == wanted) {
      size_t value = line.find_first_not_of(' ', wanted.size());
      return value == std::string::npos ? "" : line.substr(value);
    }
    start = end + 2;
  }
  return "";
}

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
  curl_easy_setopt(curl_.get(), CURLOPT_HEADERFUNCTION, &append);
  curl_easy_setopt(curl_.get(), CURLOPT_HEADERDATA, &result.head);
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

#include "tests/support/http_client.h"

#include <cctype>

namespace dq::test {
namespace {

size_t append(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

}  // namespace

size_t keep_header_line(char* data, size_t size, size_t count, void* user) {
  std::string line(data, size * count);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    size_t start = line.find_first_not_of(' ', colon + 1);
    size_t end = line.find_last_not_of("\r\n");
    std::string value = start == std::string::npos || end < start
                            ? std::string()
                            : line.substr(start, end + 1 - start);
    (*static_cast<std::map<std::string, std::string>*>(user))[name] = value;
  }
  return size * count;
}

Json HttpResult::json() const { return Json::parse(body, nullptr, false); }

std::string HttpResult::header(const std::string& name) const {
  std::string lower = name;
  for (char& c : lower) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  auto found = headers.find(lower);
  return found == headers.end() ? "" : found->second;
}

HttpClient::HttpClient() : curl_(curl_easy_init()) {}

HttpResult HttpClient::request(const std::string& method, const std::string& url,
                               const std::string& body, int timeout_ms,
                               const std::vector<std::string>& request_headers) {
  HttpResult result;
  curl_easy_setopt(curl_.get(), CURLOPT_URL, url.c_str());
  // POSTFIELDS switches the handle to POST, so a reused handle is reset to
  // GET first and given a body only when the method carries one.
  curl_easy_setopt(curl_.get(), CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(curl_.get(), CURLOPT_NOBODY, method == "HEAD" ? 1L : 0L);
  if (method == "POST" || method == "PUT" || method == "PATCH") {
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
  for (const auto& line : request_headers) {
    append_header(headers, line.c_str());
  }
  curl_easy_setopt(curl_.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl_.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(curl_.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl_.get(), CURLOPT_WRITEFUNCTION, &append);
  curl_easy_setopt(curl_.get(), CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(curl_.get(), CURLOPT_HEADERFUNCTION, &keep_header_line);
  curl_easy_setopt(curl_.get(), CURLOPT_HEADERDATA, &result.headers);
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

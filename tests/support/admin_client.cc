// Implements tests/support/admin_client.h with libcurl.
#include "tests/support/admin_client.h"

#include <curl/curl.h>

#include <cctype>

#include "common/http/curl_handle.h"
#include "tests/support/http_client.h"

namespace dq::test {
namespace {

size_t keep_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

}  // namespace

std::string AdminAnswer::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

AdminAnswer AdminClient::call(const std::string& method, const std::string& path,
                              const std::string& body, bool with_csrf,
                              const std::string& extra_header) {
  CurlEasy easy(curl_easy_init());
  CURL* curl = easy.get();
  AdminAnswer answer;
  CurlSlist headers;
  append_header(headers, "Content-Type: application/json");
  if (!cookie_.empty()) {
    append_header(headers, ("Cookie: " + cookie_).c_str());
  }
  if (with_csrf && !csrf_.empty()) {
    append_header(headers, ("X-CSRF-Token: " + csrf_).c_str());
  }
  if (!extra_header.empty()) {
    append_header(headers, extra_header.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, (base_ + path).c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty() || method == "POST" || method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, keep_header_line);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer.headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  std::string source = "host!" + source_;
  if (!source_.empty()) {
    curl_easy_setopt(curl, CURLOPT_INTERFACE, source.c_str());
  }
  CURLcode done = curl_easy_perform(curl);
  if (done == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  } else {
    answer.error = curl_easy_strerror(done);
  }
  return answer;
}

AdminAnswer AdminClient::login(const std::string& user, const std::string& password) {
  AdminAnswer answer =
      call("POST", "/api/login", Json{{"user", user}, {"password", password}}.dump(), false);
  if (answer.status == 200) {
    std::string set = answer.header("set-cookie");
    cookie_ = set.substr(0, set.find(';'));
    csrf_ = answer.json()["csrf"].get<std::string>();
  }
  return answer;
}

}  // namespace dq::test

// Implements the webhook POST (see webhook.h).
#include "common/alerts/webhook.h"

#include <algorithm>

#include "common/http/curl_handle.h"

namespace dq {
namespace {

constexpr size_t kKeptAnswerBytes = 200;

size_t keep_answer(char* data, size_t size, size_t count, void* user) {
  auto* answer = static_cast<std::string*>(user);
  size_t n = size * count;
  if (answer->size() < kKeptAnswerBytes) {
    answer->append(data, std::min(n, kKeptAnswerBytes - answer->size()));
  }
  return n;
}

}  // namespace

Result<std::string> post_webhook(const std::string& url, const Json& payload, int timeout_ms) {
  return post_json(url, payload.dump(), {}, timeout_ms);
}

Result<std::string> post_json(const std::string& url, const std::string& body,
                              const std::vector<std::string>& extra_headers, int timeout_ms,
                              const CallbackPolicy* policy, const std::string& what) {
  CurlEasy easy(curl_easy_init());
  if (!easy) {
    return Status(Code::kInternal, "curl_easy_init failed");
  }
  std::string answer;
  char error[CURL_ERROR_SIZE] = "";
  CurlSlist headers;
  append_header(headers, "Content-Type: application/json");
  append_header(headers, "User-Agent: dq-redis-checker");
  for (const auto& header : extra_headers) {
    append_header(headers, header.c_str());
  }
  CURL* handle = easy.get();
  CallbackGuard guard;
  if (policy != nullptr) {
    guard.arm(handle, *policy, url);
  }
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_POST, 1L);
  curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, keep_answer);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode rc = curl_easy_perform(handle);
  if (rc != CURLE_OK) {
    std::string why = !guard.refused().empty() ? guard.refused()
                      : error[0] != '\0'       ? std::string(error)
                                               : std::string(curl_easy_strerror(rc));
    return Status(Code::kUnavailable, what + " " + url + ": " + why);
  }
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  std::string said = "HTTP " + std::to_string(status) + (answer.empty() ? "" : ": " + answer);
  if (status < 200 || status > 299) {
    return Status(Code::kUnavailable, what + " " + url + ": " + said);
  }
  return said;
}

}  // namespace dq

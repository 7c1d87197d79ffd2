// Implements the webhook POST (see webhook.h).
#include "common/alerts/webhook.h"

#include <chrono>

#include "common/core/redact.h"
#include "common/http/curl_handle.h"
#include "common/registry/callback_rules.h"

namespace dq {
namespace {

// The answer's body is read and dropped: nothing of it leaves this file.
size_t drop_answer(char* /*data*/, size_t size, size_t count, void* /*user*/) {
  return size * count;
}

}  // namespace

std::string Posted::text() const {
  return "HTTP " + std::to_string(status) + " in " + std::to_string(took_ms) + " ms";
}

CallbackPolicy webhook_policy(const Config& config, Registry& registry) {
  CallbackPolicy policy = callback_policy(config, registry);
  policy.allow_only({});
  return policy;
}

Status check_webhook_url(const CallbackPolicy& policy, const std::string& url) {
  return url.empty() ? Status::ok() : policy.check_url(url, "webhook_url");
}

Result<Posted> post_webhook(const std::string& url, const Json& payload, int timeout_ms,
                            const CallbackPolicy& policy) {
  Status allowed = check_webhook_url(policy, url);
  if (!allowed.is_ok()) {
    return allowed;
  }
  return post_json(url, payload.dump(), {}, timeout_ms, &policy, "webhook");
}

Result<Posted> post_json(const std::string& url, const std::string& body,
                         const std::vector<std::string>& extra_headers, int timeout_ms,
                         const CallbackPolicy* policy, const std::string& what) {
  CurlEasy easy(curl_easy_init());
  if (!easy) {
    return Status(Code::kInternal, "curl_easy_init failed");
  }
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
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, drop_answer);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  auto started = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(handle);
  Posted posted;
  posted.took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  std::string target = what + " " + url_origin(url);
  if (rc != CURLE_OK) {
    // curl's own words, which may quote the URL: only its origin is shown.
    std::string why = !guard.refused().empty() ? guard.refused()
                      : error[0] != '\0'       ? redact_text(error, url)
                                               : std::string(curl_easy_strerror(rc));
    return Status(Code::kUnavailable, target + ": " + why);
  }
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &posted.status);
  if (posted.status < 200 || posted.status > 299) {
    return Status(Code::kUnavailable, target + ": " + posted.text());
  }
  return posted;
}

}  // namespace dq

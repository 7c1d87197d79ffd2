// Implements common/http/callback_probe.h with one libcurl easy transfer, guarded
// by CallbackGuard so the probe connects only where a delivery may.
#include "common/http/callback_probe.h"

#include <algorithm>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/http/curl_handle.h"

namespace dq {
namespace {

constexpr size_t kKeptBytes = 512;
constexpr const char* kProbeId = "dq-test-callback";

size_t keep_start(char* data, size_t size, size_t count, void* user) {
  auto* kept = static_cast<std::string*>(user);
  size_t n = size * count;
  if (kept->size() < kKeptBytes) {
    kept->append(data, std::min(n, kKeptBytes - kept->size()));
  }
  return n;
}

std::string escape(CURL* handle, const std::string& text) {
  char* escaped = curl_easy_escape(handle, text.c_str(), static_cast<int>(text.size()));
  std::string out = escaped ? escaped : "";
  curl_free(escaped);
  return out;
}

}  // namespace

CallbackProbeResult probe_callback(const Topic& topic, const CallbackPolicy& policy) {
  CallbackProbeResult result;
  Status allowed = policy.check_url(topic.callback_url);
  if (!allowed.is_ok()) {
    result.error = allowed.message();
    return result;
  }
  CurlEasy easy(curl_easy_init());
  if (!easy) {
    result.error = "curl_easy_init failed";
    return result;
  }
  CURL* handle = easy.get();
  int64_t now = now_ms();
  Json sample = {{"topic", topic.name}, {"id", kProbeId},   {"body", {{"test", true}}},
                 {"attempt", 1},        {"due_at_ms", now}, {"created_at_ms", now}};
  std::string body = sample.dump();
  std::string url = topic.callback_url;
  if (topic.method == "GET") {
    url += (url.find('?') == std::string::npos ? "?" : "&");
    url += "topic=" + escape(handle, topic.name) + "&id=" + kProbeId +
           "&body=" + escape(handle, sample["body"].dump()) +
           "&attempt=1&due_at_ms=" + std::to_string(now) + "&created_at_ms=" + std::to_string(now);
  }
  CurlSlist headers;
  append_header(headers, "Content-Type: application/json");
  append_header(headers, "User-Agent: dq-admin");
  append_header(headers, ("X-DQ-Topic: " + topic.name).c_str());
  append_header(headers, (std::string("X-DQ-Id: ") + kProbeId).c_str());
  append_header(headers, "X-DQ-Attempt: 1");
  append_header(headers, "X-DQ-Test: 1");
  char error[CURL_ERROR_SIZE] = "";
  CallbackGuard guard;
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  if (topic.method != "GET") {
    curl_easy_setopt(handle, CURLOPT_POST, 1L);
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, keep_start);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &result.first_bytes);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(topic.timeout_ms));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  guard.arm(handle, policy, topic.callback_url);
  int64_t started = monotonic_ms();
  CURLcode rc = curl_easy_perform(handle);
  result.time_ms = monotonic_ms() - started;
  if (rc != CURLE_OK) {
    result.error = !guard.refused().empty() ? guard.refused()
                   : error[0] != '\0'       ? std::string(error)
                                            : curl_easy_strerror(rc);
    return result;
  }
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  result.reached = true;
  result.status = static_cast<int>(status);
  return result;
}

}  // namespace dq

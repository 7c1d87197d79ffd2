// libcurl set-up of one callback and the reading of its outcome.
#include "consumer/delivery.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <utility>

#include "common/core/clock.h"
#include "common/http/retry_after.h"
#include "common/registry/success_rule.h"
#include "common/store/end_memory.h"

namespace dq {
namespace {

constexpr size_t kResponseHeadBytes = 200;                // shown in an attempt's error text
constexpr size_t kResponseRuleBytes = size_t{64} * 1024;  // read for a topic's success_json
// libcurl's connect timeout, which 0 would set to its default of 300 s: a
// day, so that only the consumer's clock ends a call.
constexpr long kNoCurlTimeoutMs = 24L * 3600 * 1000;

CallbackPolicy& callback_policy() {
  static CallbackPolicy policy;
  return policy;
}

// The policy's verdict per topic callback URL (a POST goes to the topic's
// URL as it is), so the URL is not parsed again for every delivery.
std::unordered_map<std::string, std::string>& url_verdicts() {
  static std::unordered_map<std::string, std::string> verdicts;
  return verdicts;
}
constexpr size_t kMaxUrlVerdicts = 1024;

const std::string& url_verdict(const std::string& url) {
  auto& verdicts = url_verdicts();
  auto it = verdicts.find(url);
  if (it != verdicts.end()) {
    return it->second;
  }
  if (verdicts.size() >= kMaxUrlVerdicts) {
    verdicts.clear();
  }
  return verdicts.emplace(url, CallbackGuard::url_refusal(callback_policy(), url)).first->second;
}

size_t keep_response_head(char* data, size_t size, size_t count, void* user) {
  auto* delivery = static_cast<Delivery*>(user);
  std::string* head = &delivery->response_head;
  size_t limit = delivery->topic->success_json.empty() ? kResponseHeadBytes : kResponseRuleBytes;
  size_t bytes = size * count;
  if (head->size() < limit) {
    head->append(data, std::min(bytes, limit - head->size()));
  }
  return bytes;
}

std::string one_line(std::string text) {
  if (text.size() > kResponseHeadBytes) {
    text.resize(kResponseHeadBytes);
  }
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return text;
}

// A 2xx answer whose body breaks the topic's success_json is a failed attempt.
void check_success_rule(Delivery* delivery, TransferResult* result) {
  if (delivery->topic->success_json.empty()) {
    return;
  }
  auto rule = parse_success_rule(delivery->topic->success_json);
  if (!rule.is_ok()) {
    return;  // validate_topic refuses such a topic
  }
  std::string why;
  if (response_matches(*rule, delivery->response_head, &why)) {
    return;
  }
  result->ok = false;
  result->error = "HTTP " + std::to_string(result->http_status) + " but success_json " +
                  delivery->topic->success_json + " does not hold: " + why;
  std::string head = one_line(delivery->response_head);
  if (!head.empty()) {
    result->error += ": " + head;
  }
}

// Topic callback URLs parsed once for libcurl (CURLOPT_CURLU) rather than by
// every transfer, with the flags libcurl parses a text URL with. Kept for
// the process's life: a transfer reads its handle only when it starts.
// nullptr: libcurl refused the URL, so the transfer gets it as text and
// fails as it always did.
CURLU* parsed_url(const std::string& url) {
  static std::unordered_map<std::string, CurlUrl> parsed;
  auto it = parsed.find(url);
  if (it != parsed.end()) {
    return it->second.get();
  }
  if (parsed.size() >= kMaxUrlVerdicts) {
    return nullptr;
  }
  CurlUrl handle(curl_url());
  if (handle && curl_url_set(handle.get(), CURLUPART_URL, url.c_str(),
                             CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
    handle.reset();
  }
  return parsed.emplace(url, std::move(handle)).first->second.get();
}

// libcurl looks up the proxy variables in the environment for every
// transfer. When none is set, saying "no proxy" once per handle is the same
// and saves those look-ups.
bool proxy_in_environment() {
  for (const char* name : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                           "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
    if (std::getenv(name) != nullptr) {
      return true;
    }
  }
  return false;
}

// CURLOPT_PREREQFUNCTION: libcurl is about to send a request of the
// transfer. The first goes; a second one is libcurl's retry after a reused
// connection died without an answer, and goes only when nothing of the first
// was written (the receiver cannot have seen it); any later one never.
int before_each_request(void* user, char* /*remote_ip*/, char* /*local_ip*/, int /*remote_port*/,
                        int /*local_port*/) {
  auto* delivery = static_cast<Delivery*>(user);
  long written = 0;
  curl_easy_getinfo(delivery->easy.get(), CURLINFO_REQUEST_SIZE, &written);
  bool first = delivery->requests == 0;
  bool unsent = delivery->requests == 1 && written == delivery->request_bytes_seen;
  if (!first && !unsent) {
    delivery->resend_refused = true;
    return CURL_PREREQFUNC_ABORT;
  }
  ++delivery->requests;
  delivery->request_bytes_seen = written;
  return CURL_PREREQFUNC_OK;
}

// A 429 or 503 answer's Retry-After, when it has one dq can read.
void read_retry_after(Delivery* delivery, TransferResult* result) {
  if (!defers_by_retry_after(result->http_status)) {
    return;
  }
  curl_header* header = nullptr;
  if (curl_easy_header(delivery->easy.get(), "Retry-After", 0, CURLH_HEADER, -1, &header) !=
          CURLHE_OK ||
      header == nullptr || header->value == nullptr) {
    return;
  }
  auto wait = parse_retry_after(header->value, now_ms());
  if (wait) {
    result->retry_after_ms = *wait;
  } else {
    result->error += " (Retry-After '" + one_line(header->value) + "' not understood)";
  }
}

}  // namespace

void use_callback_policy(CallbackPolicy policy) {
  callback_policy() = std::move(policy);
  url_verdicts().clear();
}

std::unique_ptr<Delivery> new_delivery() {
  auto delivery = std::make_unique<Delivery>();
  delivery->easy.reset(curl_easy_init());
  CURL* easy = delivery->easy.get();
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "dq-consumer");
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, keep_response_head);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, delivery.get());
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, delivery->error);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, delivery.get());
  curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, before_each_request);
  curl_easy_setopt(easy, CURLOPT_PREREQDATA, delivery.get());
  // No timeouts of libcurl's: it checks them before it reads a socket, so
  // after a pause of the process it failed calls whose answers were waiting.
  // The consumer's clock judges them (consumer/transfer_clock.h).
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 0L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, kNoCurlTimeoutMs);
  static const bool environment_proxy = proxy_in_environment();
  if (!environment_proxy) {
    curl_easy_setopt(easy, CURLOPT_PROXY, "");
    curl_easy_setopt(easy, CURLOPT_NOPROXY, "");
  }
  return delivery;
}

void prepare_transfer(Delivery* delivery) {
  CURL* easy = delivery->easy.get();
  delivery->response_head.clear();
  delivery->error[0] = '\0';
  delivery->requests = 0;
  delivery->request_bytes_seen = 0;
  delivery->resend_refused = false;
  std::vector<std::string>& lines = delivery->request.headers;
  size_t count = std::min(lines.size(), kMaxCallbackHeaders);
  for (size_t i = 0; i < count; ++i) {
    delivery->header_nodes[i].data = lines[i].data();
    delivery->header_nodes[i].next = i + 1 < count ? &delivery->header_nodes[i + 1] : nullptr;
  }
  const std::string& url = delivery->request.url;
  bool topic_url = url == delivery->topic->callback_url;  // a GET's URL differs every time
  CURLU* parsed = topic_url ? parsed_url(url) : nullptr;
  if (parsed != nullptr) {
    // No text URL: libcurl would keep using the last one instead.
    curl_easy_setopt(easy, CURLOPT_URL, nullptr);
    curl_easy_setopt(easy, CURLOPT_CURLU, parsed);
  } else {
    curl_easy_setopt(easy, CURLOPT_CURLU, nullptr);
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, count > 0 ? delivery->header_nodes : nullptr);
  if (delivery->request.post) {
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, delivery->request.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(delivery->request.body.size()));
  } else {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  }
  if (topic_url) {
    delivery->guard.arm_checked(easy, callback_policy(), url_verdict(url));
  } else {
    delivery->guard.arm(easy, callback_policy(), url);
  }
}

void note_timeout(Delivery* delivery, int64_t waited_ms) {
  if (delivery->requests == 0) {
    std::snprintf(delivery->error, sizeof(delivery->error),
                  "Connection timed out after %lld milliseconds",
                  static_cast<long long>(waited_ms));
    return;
  }
  curl_off_t received = 0;
  curl_easy_getinfo(delivery->easy.get(), CURLINFO_SIZE_DOWNLOAD_T, &received);
  std::snprintf(delivery->error, sizeof(delivery->error),
                "Operation timed out after %lld milliseconds with %lld bytes received",
                static_cast<long long>(waited_ms), static_cast<long long>(received));
}

TransferResult transfer_result(Delivery* delivery, CURLcode code) {
  TransferResult result;
  curl_easy_getinfo(delivery->easy.get(), CURLINFO_RESPONSE_CODE, &result.http_status);
  if (code != CURLE_OK && !delivery->guard.refused().empty()) {
    result.error = "callback refused by the URL rules: " + delivery->guard.refused();
    return result;
  }
  if (code != CURLE_OK && delivery->resend_refused) {
    result.error =
        "the connection closed after the request was sent, before any answer; not sent again "
        "(the receiver may have it)";
    return result;
  }
  if (code != CURLE_OK) {
    result.error = delivery->error[0] ? delivery->error : curl_easy_strerror(code);
    return result;
  }
  if (result.http_status >= 200 && result.http_status < 300) {
    result.ok = true;
    check_success_rule(delivery, &result);
    if (delivery->topic->keep_done_days > 0) {
      result.answer_head = delivery->response_head.substr(0, kHistoryAnswerBytes);
    }
    return result;
  }
  result.error = "HTTP " + std::to_string(result.http_status);
  std::string head = one_line(delivery->response_head);
  if (!head.empty()) {
    result.error += ": " + head;
  }
  read_retry_after(delivery, &result);
  return result;
}

}  // namespace dq

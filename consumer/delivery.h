// Delivery: one callback in flight: the reserved job, the topic it was
// reserved under, and the libcurl easy handle carrying the request. The
// consumer keeps finished deliveries for the next ones (consumer_loop.h):
// the handle keeps its connection, the strings their buffers.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/http/curl_handle.h"
#include "common/registry/callback_url.h"
#include "common/registry/registry.h"
#include "common/store/job.h"
#include "consumer/callback_request.h"

namespace dq {

constexpr size_t kMaxCallbackHeaders = 8;

struct Delivery {
  size_t shard = 0;
  Job job;                             // attempts is this attempt's number
  Lease lease;                         // names this delivery to ack and fail
  std::shared_ptr<const Topic> topic;  // snapshot at reserve time (retry policy, timeout)
  std::string receiver;                // callback host:port, when its circuit breaker is on
  std::string endpoint;                // callback host:port/path, when its circuit breaker is on
  CallbackRequest request;
  CurlEasy easy;
  // request.headers as curl's header list, pointing into those strings: no
  // copy of a header line per delivery.
  curl_slist header_nodes[kMaxCallbackHeaders] = {};
  // First bytes of the answer: 200 for the error text, 64 KiB when the
  // topic has a success_json rule to check.
  std::string response_head;
  char error[CURL_ERROR_SIZE] = {0};
  int64_t started_ms = 0;   // monotonic
  int64_t deadline_ms = 0;  // monotonic: started_ms + the topic's timeout
  CallbackGuard guard;      // checks every address curl connects to
  // libcurl sends a request again when the reused connection it went out on
  // died before an answer. One attempt reaches the receiver at most once: a
  // resend goes only when nothing of the request was written (CURLINFO_REQUEST_SIZE
  // unchanged), and a second resend never (CURLOPT_PREREQFUNCTION aborts it).
  int requests = 0;             // requests libcurl started for this transfer
  long request_bytes_seen = 0;  // CURLINFO_REQUEST_SIZE when the last one started
  bool resend_refused = false;  // the transfer ended because a resend was refused
  // The call holds a permit of its capped topic (consumer/permit_keeper.h).
  bool permit = false;
};

// The callback URL rules every delivery of this process is held to (see
// common/registry/callback_url.h); run_consumer sets them from the config. Until
// then only link-local addresses are refused.
void use_callback_policy(CallbackPolicy policy);

// A delivery with its easy handle, and the options every transfer of it
// shares set once (CURLOPT_PRIVATE and the write callback point at it).
std::unique_ptr<Delivery> new_delivery();

// Sets up delivery->easy for its request: the options that differ between
// transfers, every one of them each time (the handle keeps what the last
// transfer set; no curl_easy_reset), and clears what a previous delivery
// left in the answer buffers. A connection the callback rules refuse is
// never opened: the transfer fails with the reason.
void prepare_transfer(Delivery* delivery);

// The outcome of a finished transfer: ok (2xx) or the error text.
struct TransferResult {
  bool ok = false;
  long http_status = 0;  // 0 when no answer came
  std::string error;     // empty when ok
  // A 429 or 503 with a Retry-After it could read: the wait it asks for, ms
  // (common/http/retry_after.h); -1 otherwise.
  int64_t retry_after_ms = -1;
  // A 2xx's first bytes, for a topic that keeps history (keep_done_days).
  std::string answer_head;
};

TransferResult transfer_result(Delivery* delivery, CURLcode code);

// A call the consumer's clock ended (consumer/transfer_clock.h): writes its
// error text, in libcurl's words ("Connection timed out ..." before a request
// went out, "Operation timed out ..." after); transfer_result() with
// CURLE_OPERATION_TIMEDOUT then reports it.
void note_timeout(Delivery* delivery, int64_t waited_ms);

}  // namespace dq

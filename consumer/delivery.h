// Delivery: one callback in flight: the reserved job, the topic it was
// reserved under, and the libcurl easy handle carrying the request.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <string>

#include "common/callback_url.h"
#include "common/curl_handle.h"
#include "common/job.h"
#include "common/registry.h"
#include "consumer/callback_request.h"

namespace dq {

struct Delivery {
  size_t shard = 0;
  Job job;      // attempts is this attempt's number
  Lease lease;  // names this delivery to ack and fail
  Topic topic;  // snapshot at reserve time (retry policy, timeout)
  CallbackRequest request;
  CurlEasy easy;
  CurlSlist headers;
  // First bytes of the answer: 200 for the error text, 64 KiB when the
  // topic has a success_json rule to check.
  std::string response_head;
  char error[CURL_ERROR_SIZE] = {0};
  int64_t started_ms = 0;  // monotonic
  CallbackGuard guard;     // checks every address curl connects to
};

// The callback URL rules every delivery of this process is held to (see
// common/callback_url.h); run_consumer sets them from the config. Until
// then only link-local addresses are refused.
void use_callback_policy(CallbackPolicy policy);

// Sets up delivery->easy (which must be a fresh or reset handle) for the
// request; CURLOPT_PRIVATE points back at the delivery. A connection the
// callback rules refuse is never opened: the transfer fails with the reason.
void prepare_transfer(Delivery* delivery);

// The outcome of a finished transfer: ok (2xx) or the error text.
struct TransferResult {
  bool ok = false;
  long http_status = 0;  // 0 when no answer came
  std::string error;     // empty when ok
};

TransferResult transfer_result(Delivery* delivery, CURLcode code);

}  // namespace dq

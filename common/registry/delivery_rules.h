// A topic's rules for answers that protect the receiver: dead_on (statuses
// that dead-letter a job at once), retry_jitter (a random lengthening of each
// retry wait) and max_deferrals (how many Retry-After answers a job may
// honour). See docs/delivery.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/status.h"

namespace dq {

constexpr int kDefaultMaxDeferrals = 10;
constexpr int kMaxMaxDeferrals = 1000;
constexpr int kMaxRetryJitterPercent = 100;
constexpr size_t kMaxDeadOnStatuses = 32;
// A topic's dedup_window_s by default: a producer's retries of an add go on
// for minutes, not seconds (docs/RELIABILITY.md, "A retried add").
constexpr int64_t kDefaultDedupWindowS = 600;
constexpr int64_t kMaxDedupWindowS = int64_t{7} * 24 * 3600;
// A topic's max_retry_duration_s by default (Cloud Tasks' name): nothing
// waits forever, but a week covers a long outage of a receiver.
constexpr int64_t kDefaultMaxRetryDurationS = int64_t{7} * 24 * 3600;
constexpr int64_t kMaxMaxRetryDurationS = int64_t{365} * 24 * 3600;
// A ttl (a topic's, or a job's own) is at most as long as an add may be due
// ahead: ten years.
constexpr int64_t kMaxJobTtlS = int64_t{3650} * 24 * 3600;
// A topic's history is kept at most a year.
constexpr int kMaxKeepDoneDays = 365;

// Parses dead_on ("400,410,422"): HTTP statuses 100-599 but no 2xx, commas,
// optional spaces, at most kMaxDeadOnStatuses. Empty text: no status.
Result<std::vector<int>> parse_dead_on(const std::string& text);

// True when `http_status` is one of dead_on's (text that does not parse
// holds none; validate_topic refuses it).
bool is_dead_on(const std::string& dead_on, long http_status);

// A retry wait lengthened by jitter: wait_ms + floor(wait_ms * percent/100 *
// unit), with unit uniform in [0, 1). Never shorter than wait_ms, so a retry
// is never earlier than the schedule says; at most wait_ms * (1 + percent/100).
int64_t jittered_wait_ms(int64_t wait_ms, int percent, double unit);

// jittered_wait_ms with a unit from this thread's random generator.
int64_t jittered_wait_ms(int64_t wait_ms, int percent);

}  // namespace dq

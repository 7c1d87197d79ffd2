// Implements the topic checks of common/registry/registry.h: validate_topic
// and validate_email_list (each refusal names the field).
#include <string>
#include <vector>

#include "common/core/late_policy.h"
#include "common/core/time_zone.h"
#include "common/registry/callback_url.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/registry.h"
#include "common/registry/signing_key_store.h"
#include "common/registry/success_rule.h"
#include "common/registry/topic_caps.h"
#include "common/registry/topic_window.h"
#include "common/store/job.h"

namespace dq {
namespace {

constexpr int64_t kMaxDefaultDelayS = 10LL * 366 * 24 * 3600;  // ten years, as the API allows
constexpr int64_t kMaxRetryStepMs = kMaxDefaultDelayS * 1000;
constexpr size_t kMaxTextBytes = 1024;  // creator, alert_emails, retry_ms

Status invalid(const std::string& field, const std::string& why) {
  return Status(Code::kInvalid, field + ": " + why);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    parts.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) {
      return parts;
    }
    start = comma + 1;
  }
}

bool only_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

Status validate_retry_ms(const std::string& retry_ms) {
  if (retry_ms.empty()) {
    return Status::ok();
  }
  if (retry_ms.size() > kMaxTextBytes) {
    return invalid("retry_ms", "longer than 1024 bytes");
  }
  for (const std::string& step : split_commas(retry_ms)) {
    if (!only_digits(step) || step.size() > 13 || std::stoll(step) < 1 ||
        std::stoll(step) > kMaxRetryStepMs) {
      return invalid("retry_ms", "'" + retry_ms +
                                     "' must be a comma-separated list of positive integers (ms), "
                                     "each at most ten years");
    }
  }
  return Status::ok();
}

Status validate_emails(const std::string& field, const std::string& emails) {
  if (emails.empty()) {
    return Status::ok();
  }
  if (emails.size() > kMaxTextBytes) {
    return invalid(field, "longer than 1024 bytes");
  }
  for (const std::string& email : split_commas(emails)) {
    size_t at = email.find('@');
    bool bad_char = false;
    for (unsigned char c : email) {
      bad_char = bad_char || c <= ' ' || c == 0x7f;
    }
    if (at == std::string::npos || at == 0 || at + 1 == email.size() ||
        email.find('@', at + 1) != std::string::npos || bad_char) {
      return invalid(field, "'" + email + "' is not an email address (name@host)");
    }
  }
  return Status::ok();
}

// max_deferrals, dead_on and retry_jitter (common/registry/delivery_rules.h).
Status validate_receiver_rules(const Topic& topic) {
  if (topic.max_deferrals < 0 || topic.max_deferrals > kMaxMaxDeferrals) {
    return invalid("max_deferrals", std::to_string(topic.max_deferrals) + " must be from 0 to " +
                                        std::to_string(kMaxMaxDeferrals));
  }
  auto dead_on = parse_dead_on(topic.dead_on);
  if (!dead_on.is_ok()) {
    return dead_on.status();  // names dead_on
  }
  if (topic.retry_jitter < 0 || topic.retry_jitter > kMaxRetryJitterPercent) {
    return invalid("retry_jitter",
                   std::to_string(topic.retry_jitter) + " must be a percent from 0 to 100");
  }
  if (!topic.tz.empty()) {
    if (auto zone = TimeZone::find(topic.tz); !zone.is_ok()) {
      return invalid("tz", zone.status().message());
    }
  }
  if (topic.delivery_window.size() > kMaxTextBytes) {
    return invalid("delivery_window", "longer than " + std::to_string(kMaxTextBytes) + " bytes");
  }
  if (auto window = parse_topic_window(topic); !window.is_ok()) {
    return invalid("delivery_window", window.status().message());
  }
  if (topic.dedup_window_s < 0 || topic.dedup_window_s > kMaxDedupWindowS) {
    return invalid("dedup_window_s", std::to_string(topic.dedup_window_s) +
                                         " must be from 0 (remember nothing) to " +
                                         std::to_string(kMaxDedupWindowS) + " (7 days)");
  }
  if (topic.max_retry_duration_s < 0 || topic.max_retry_duration_s > kMaxMaxRetryDurationS) {
    return invalid("max_retry_duration_s",
                   std::to_string(topic.max_retry_duration_s) + " must be from 0 (no limit) to " +
                       std::to_string(kMaxMaxRetryDurationS) + " (365 days)");
  }
  if (topic.ttl < 0 || topic.ttl > kMaxJobTtlS) {
    return invalid("ttl", std::to_string(topic.ttl) + " must be from 0 (no limit) to " +
                              std::to_string(kMaxJobTtlS) + " (ten years)");
  }
  if (topic.keep_done_days < 0 || topic.keep_done_days > kMaxKeepDoneDays) {
    return invalid("keep_done_days", std::to_string(topic.keep_done_days) +
                                         " must be from 0 (keep nothing) to " +
                                         std::to_string(kMaxKeepDoneDays));
  }
  if (topic.on_dependency_dead != "dead" && topic.on_dependency_dead != "release") {
    return invalid("on_dependency_dead",
                   "must be dead (a job waiting for one that died, expired or was deleted is "
                   "dead-lettered) or release (it goes on as if that one was delivered)");
  }
  if (auto policy = LatePolicy::parse(topic.late_policy); !policy.is_ok()) {
    return invalid("late_policy", policy.status().message());
  }
  return Status::ok();
}

// The dead-letter callback obeys the callback URL's rules; the refusal names
// its own field.
Status validate_dead_callback(const std::string& url) {
  if (url.empty()) {
    return Status::ok();
  }
  return dead_callback_status(validate_callback_url(url));
}

}  // namespace

Status dead_callback_status(const Status& callback_url_status) {
  const std::string prefix = "callback_url: ";
  const std::string& message = callback_url_status.message();
  if (callback_url_status.is_ok() || message.rfind(prefix, 0) != 0) {
    return callback_url_status;
  }
  return Status(callback_url_status.code(), "dead_callback: " + message.substr(prefix.size()));
}

Status validate_topic(const Topic& topic) {
  if (!valid_topic(topic.name)) {
    return invalid("name", "'" + topic.name + "' must be 1-64 characters of A-Z a-z 0-9 _ . -");
  }
  if (topic.mode != "push" && topic.mode != "pull") {
    return invalid("mode", "'" + topic.mode + "' must be push or pull");
  }
  // A pull topic has no callback (workers reserve its jobs); one it keeps
  // from its push days obeys the same rules.
  Status status = topic.pull() && topic.callback_url.empty()
                      ? Status::ok()
                      : validate_callback_url(topic.callback_url);
  if (!status.is_ok()) {
    return status;
  }
  if (topic.method != "POST" && topic.method != "GET") {
    return invalid("method", "'" + topic.method + "' must be POST or GET");
  }
  if (topic.callback_format != "json" && topic.callback_format != "form") {
    return invalid("callback_format", "'" + topic.callback_format + "' must be json or form");
  }
  if (!topic.success_json.empty()) {
    auto rule = parse_success_rule(topic.success_json);
    if (!rule.is_ok()) {
      return invalid("success_json", rule.status().message());
    }
  }
  if (topic.timeout_ms < 1 || topic.timeout_ms > 600000) {
    return invalid("timeout_ms", std::to_string(topic.timeout_ms) + " must be from 1 to 600000");
  }
  if (topic.default_delay_s < 0 || topic.default_delay_s > kMaxDefaultDelayS) {
    return invalid("default_delay_s", std::to_string(topic.default_delay_s) +
                                          " must be from 0 to " +
                                          std::to_string(kMaxDefaultDelayS) + " (ten years)");
  }
  if (topic.max_attempts < 0 || topic.max_attempts > 1000) {
    return invalid("max_attempts", std::to_string(topic.max_attempts) +
                                       " must be from 0 (use the default) to 1000");
  }
  if (topic.priority < 1 || topic.priority > 3) {
    return invalid("priority", std::to_string(topic.priority) + " must be 1, 2 or 3");
  }
  status = validate_retry_ms(topic.retry_ms);
  if (!status.is_ok()) {
    return status;
  }
  status = validate_emails("alert_emails", topic.alert_emails);
  if (!status.is_ok()) {
    return status;
  }
  if (topic.creator.size() > kMaxTextBytes) {
    return invalid("creator", "longer than 1024 bytes");
  }
  status = validate_receiver_rules(topic);
  if (!status.is_ok()) {
    return status;
  }
  if (topic.circuit_failures < 1 || topic.circuit_failures > 1000) {
    return invalid("circuit_failures",
                   std::to_string(topic.circuit_failures) + " must be from 1 to 1000");
  }
  if (topic.circuit_open_ms < 100 || topic.circuit_open_ms > 3600000) {
    return invalid("circuit_open_ms", std::to_string(topic.circuit_open_ms) +
                                          " must be from 100 to 3600000 (one hour)");
  }
  status = validate_topic_caps(topic);
  if (!status.is_ok()) {
    return status;
  }
  status = validate_dead_callback(topic.dead_callback);
  if (!status.is_ok()) {
    return status;
  }
  status = validate_schedules(topic.schedules, topic.tz);
  if (!status.is_ok()) {
    return status;
  }
  return validate_topic_signing(topic);
}

Status validate_email_list(const std::string& field, const std::string& emails) {
  return validate_emails(field, emails);
}

}  // namespace dq
